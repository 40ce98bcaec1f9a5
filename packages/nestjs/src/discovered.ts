import type { DiscoveryService } from '@nestjs/core';

/*
 * What the application has, as Nest's DiscoveryService shows it: the classes where decorators can declare
 * limits (controllers, resolvers, gateways) and their handlers.
 */

/** The classes of the application's controllers and providers (resolvers and gateways are providers). */
export function classesOf(discovery: DiscoveryService): Set<object> {
  const out = new Set<object>();
  for (const wrapper of [...discovery.getControllers(), ...discovery.getProviders()]) {
    const instance = wrapper.instance as object | undefined;
    if (typeof instance === 'object' && instance !== null && typeof instance.constructor === 'function') out.add(instance.constructor);
  }
  return out;
}

/** A class's methods, its parents' included (the first definition of each name). */
export function handlersOf(cls: object): object[] {
  const seen = new Set<string>();
  const out: object[] = [];
  for (
    let proto = (cls as { prototype?: object }).prototype;
    proto && proto !== Object.prototype;
    proto = Object.getPrototypeOf(proto) as object
  ) {
    for (const name of Object.getOwnPropertyNames(proto)) {
      if (name === 'constructor' || seen.has(name)) continue;
      seen.add(name);
      const value = Object.getOwnPropertyDescriptor(proto, name)?.value as unknown;
      if (typeof value === 'function') out.push(value);
    }
  }
  return out;
}
