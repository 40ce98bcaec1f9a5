import { readFileSync } from 'node:fs';
import { dirname, join, sep } from 'node:path';

/*
 * @floodgate/nestjs supports NestJS 11 and 12, and every test file of this package runs on both: the
 * project 'nestjs' on the package's devDependencies (Nest 12), 'nestjs (Nest 11)' on fixtures/nestjs-11
 * (jest.config.ts). This file fails when a project loads another Nest than the one it claims.
 */
const claimed = Number((globalThis as { FLOODGATE_NEST_MAJOR?: string }).FLOODGATE_NEST_MAJOR ?? '12');

/** The folder and version of the copy of `name` that a require() here loads (what the package and the apps load too). */
function loaded(name: string): { dir: string; major: number } {
  let dir = dirname(require.resolve(name));
  while (!dir.endsWith(`${sep}${name.replace('/', sep)}`)) dir = dirname(dir);
  const { version } = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { version: string };
  return { dir, major: Number(version.split('.')[0]) };
}

test.each(['common', 'core', 'platform-express', 'platform-fastify', 'websockets', 'platform-ws'])(
  `@nestjs/%s is the Nest this project claims (${claimed})`,
  (name) => {
    const { dir, major } = loaded(`@nestjs/${name}`);
    expect(major).toBe(claimed);
    expect(dir.includes(join('fixtures', 'nestjs-11'))).toBe(claimed === 11);
  },
);

test(`GraphQL is that Nest's line (@nestjs/graphql and @nestjs/mercurius ${claimed + 2})`, () => {
  expect([loaded('@nestjs/graphql').major, loaded('@nestjs/mercurius').major]).toEqual([claimed + 2, claimed + 2]);
});
