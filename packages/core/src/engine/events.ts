import { withoutQuotedArguments } from '../stores/deadline';
import type { Decision, DecisionSource } from '../kernel/decision';
import { StoreError } from '../kernel/errors';
import { identifierKind } from '../scripts/keys';
import type { FailurePolicy } from '../config/failure-policy';
import type { Logger } from '../kernel/logger';
import type { HealthStatus } from './health';

/*
 * What a limiter tells its listeners (the `onEvent` option, limiter.subscribe()): every decision, refunds,
 * store errors, shadow denials and failed settles. A listener sees an identifier's kind ('ip', 'user', ...) and, only when
 * the limiter was made with `events: { identifiers: true }`, the identifier itself: identifiers are personal
 * data, and metrics labelled by them would grow without bound. That holds for every event type, nested
 * decisions and errors included: Events.emit() passes each event through withoutIdentifiers(), whose
 * switch over the types does not compile without a case for a new one. With no listener, a decision costs
 * one property read; with one, the event object and the calls (measured in `npm run bench:policies`).
 */

/** What became of a request, from the decision: its reason when denied, else 'allowed'. */
export type DecisionOutcome = 'allowed' | 'denied' | 'blocked' | 'lockout' | 'unavailable' | 'unidentified' | 'listed';

export interface DecisionEvent {
  type: 'decision';
  limiter: string;
  outcome: DecisionOutcome;
  /** Where it was decided: the store, the block cache, the failure policy, this process ('local'), or a list. */
  source: DecisionSource;
  /** True when shadow mode admitted a request the limiter would have denied (`outcome` is what it would have been). */
  shadow: boolean;
  /** The binding rule (of the binding identifier): undefined when no rule applied or none was known. */
  rule: { limit: number; windowMs: number } | undefined;
  /** The binding identifier's kind (the part before its first ':'; '' when it has none). */
  kind: string;
  /** The binding identifier, only with `events: { identifiers: true }`. */
  identifier?: string;
  cost: number;
  /** The plan the check ran under (limits that name plans), else undefined. */
  plan: string | undefined;
  /** The store's round trip in ms, when the store decided remotely; undefined otherwise. */
  latencyMs: number | undefined;
}

export interface RefundEvent {
  type: 'refund';
  limiter: string;
  cost: number;
  /** The kinds of the identifiers given back to. */
  kinds: string[];
  /** With `events: { identifiers: true }`. */
  identifiers?: string[];
}

export interface StoreErrorEvent {
  type: 'store-error';
  limiter: string;
  /**
   * Why the store could not decide. Without `events: { identifiers: true }`, a copy whose `cause` keeps only
   * the driver error's name, code and message: the driver's error carries the command, and its keys name
   * the identifiers.
   */
  error: StoreError;
  policy: FailurePolicy;
}

export interface ShadowDenyEvent {
  type: 'shadow-deny';
  limiter: string;
  /** The binding identifier's kind ('' when it has none). */
  kind: string;
  /**
   * The decision shadow mode did not enforce. Without `events: { identifiers: true }`, a copy without
   * `identifier`, with each state's `identifier` '' and its `error` as in a store-error event.
   */
  decision: Decision;
}

/**
 * Why a reservation's settle failed: `invalid`, no valid actual cost (nothing, a negative number, a unit
 * left out); `threw`, an adapter's `settle` option threw or rejected; `store`, the store could not take it.
 */
export type SettleFailure = 'invalid' | 'threw' | 'store';

/** A reservation's settle failed (docs/budgets.md): its estimate stays counted until its windows pass. */
export interface SettleFailedEvent {
  type: 'settle-failed';
  limiter: string;
  reason: SettleFailure;
  /** The estimate that stays counted, as one number (a decision's `cost`: the binding unit's). */
  cost: number;
  /** The kinds of the reservation's identifiers. */
  kinds: string[];
  /** With `events: { identifiers: true }`. */
  identifiers?: string[];
}

/**
 * limiter.health() answered (a readiness probe asked): no decision, whatever it sent to the store. Not sent
 * for `health({ probe: false })`, what a metrics exporter reads at each scrape.
 */
export interface HealthCheckEvent {
  type: 'health-check';
  limiter: string;
  /** The report's status. */
  status: HealthStatus;
  /** Whether it sent a probe to the store (the limiter had been idle for a second). */
  probed: boolean;
}

export type LimiterEvent = DecisionEvent | RefundEvent | StoreErrorEvent | ShadowDenyEvent | SettleFailedEvent | HealthCheckEvent;

export type EventListener = (event: LimiterEvent) => void;

/** The outcome a decision reports. */
export function outcomeOf(d: Decision): DecisionOutcome {
  // Shadow mode cleared the reason; a block left its blockReason ('' for a block() without one).
  if (d.shadowDenied && d.source === 'list') return 'listed';
  if (d.shadowDenied) return d.blockReason === 'lockout' ? 'lockout' : d.blockReason !== undefined ? 'blocked' : 'denied';
  if (d.allowed) return 'allowed';
  switch (d.reason) {
    case 'blocked':
      return d.blockReason === 'lockout' ? 'lockout' : 'blocked';
    case 'store-unavailable':
      return 'unavailable';
    case 'unidentified':
      return 'unidentified';
    case 'listed':
      return 'listed';
    default:
      return 'denied';
  }
}

/** A limiter's listeners: the `onEvent` option and subscribers, each guarded so a throw is a warning. */
export class Events {
  private readonly listeners = new Set<EventListener>();

  constructor(
    private readonly limiter: string,
    onEvent: EventListener | undefined,
    private readonly identifiers: boolean,
    private readonly logger: Logger,
  ) {
    if (onEvent) this.listeners.add(onEvent);
  }

  /** Whether anyone listens: callers skip building an event when nobody does. */
  get active(): boolean {
    return this.listeners.size > 0;
  }

  subscribe(listener: EventListener): () => void {
    const own = (event: LimiterEvent): void => listener(event);
    this.listeners.add(own);
    return () => void this.listeners.delete(own);
  }

  /** Sends `event` to every listener, without identifiers unless the limiter was made to include them. */
  emit(event: LimiterEvent): void {
    if (this.listeners.size === 0) return;
    const shown = this.identifiers ? event : withoutIdentifiers(event);
    for (const listener of this.listeners) {
      try {
        listener(shown);
      } catch (err) {
        this.logger.warn(`floodgate: an event listener threw: ${err instanceof Error ? err.message : String(err)}`);
      }
    }
  }

  decision(d: Decision, plan: string | undefined, latencyMs: number | undefined): void {
    const identifier = bindingIdentifier(d);
    const event: DecisionEvent = {
      type: 'decision',
      limiter: this.limiter,
      outcome: outcomeOf(d),
      source: d.source,
      shadow: d.shadowDenied === true,
      rule: Number.isFinite(d.limit) ? { limit: d.limit, windowMs: d.windowMs } : undefined,
      kind: kindOf(identifier),
      cost: d.cost,
      plan,
      latencyMs,
    };
    if (this.identifiers && identifier !== undefined) event.identifier = identifier;
    this.emit(event);
  }

  refund(ids: readonly string[], cost: number): void {
    const event: RefundEvent = { type: 'refund', limiter: this.limiter, cost, kinds: [...new Set(ids.map(identifierKind))] };
    if (this.identifiers) event.identifiers = [...ids];
    this.emit(event);
  }

  settleFailed(ids: readonly string[], cost: number, reason: SettleFailure): void {
    const event: SettleFailedEvent = {
      type: 'settle-failed',
      limiter: this.limiter,
      reason,
      cost,
      kinds: [...new Set(ids.map(identifierKind))],
    };
    if (this.identifiers) event.identifiers = [...ids];
    this.emit(event);
  }

  storeError(error: StoreError, policy: FailurePolicy): void {
    this.emit({ type: 'store-error', limiter: this.limiter, error, policy });
  }

  healthCheck(status: HealthStatus, probed: boolean): void {
    this.emit({ type: 'health-check', limiter: this.limiter, status, probed });
  }

  shadowDeny(decision: Decision): void {
    this.emit({ type: 'shadow-deny', limiter: this.limiter, kind: kindOf(bindingIdentifier(decision)), decision });
  }
}

function bindingIdentifier(d: Decision): string | undefined {
  return d.identifier ?? d.states[0]?.identifier;
}

function kindOf(identifier: string | undefined): string {
  return identifier === undefined ? '' : identifierKind(identifier);
}

/** `event` without any identifier, in any field (what listeners get unless `events.identifiers`). */
function withoutIdentifiers(event: LimiterEvent): LimiterEvent {
  switch (event.type) {
    case 'decision': {
      if (event.identifier === undefined) return event;
      const copy = { ...event };
      delete copy.identifier;
      return copy;
    }
    case 'refund':
    case 'settle-failed': {
      if (event.identifiers === undefined) return event;
      const copy = { ...event };
      delete copy.identifiers;
      return copy;
    }
    case 'store-error':
      return { ...event, error: anonymousError(event.error) };
    case 'health-check':
      return event; // nothing personal: the probe's identifier is not in it
    case 'shadow-deny':
      return { ...event, decision: anonymousDecision(event.decision) };
    default: {
      // A new event type must say here what in it is personal.
      const unhandled: never = event;
      return unhandled;
    }
  }
}

function anonymousDecision(d: Decision): Decision {
  const copy: Decision = { ...d, states: d.states.map((s) => ({ ...s, identifier: '' })) };
  delete copy.identifier;
  if (d.error !== undefined) copy.error = anonymousError(d.error);
  return copy;
}

/** One copy per error: every event about one failure carries the same object, as without the option. */
const anonymous = new WeakMap<StoreError, StoreError>();

/**
 * The error with Floodgate's message and a cause that keeps the driver error's name, code and message only:
 * ioredis hangs the command on its error (`command.args`: the keys, which name the identifiers), and Redis
 * quotes a refused command's first arguments in its reply.
 */
function anonymousError(error: StoreError): StoreError {
  let copy = anonymous.get(error);
  if (copy === undefined) {
    const cause = error.cause as { name?: unknown; message?: unknown; code?: unknown } | undefined;
    let plain: Error | undefined;
    if (cause !== undefined) {
      plain = new Error(withoutQuotedArguments(typeof cause?.message === 'string' ? cause.message : String(cause)));
      plain.name = typeof cause?.name === 'string' ? cause.name : 'Error';
      plain.stack = `${plain.name}: ${plain.message}`;
      if (typeof cause?.code === 'string') Object.assign(plain, { code: cause.code });
    }
    copy = new StoreError(error.kind, withoutQuotedArguments(error.message.replace(/^floodgate: /, '')), plain);
    anonymous.set(error, copy);
  }
  return copy;
}
