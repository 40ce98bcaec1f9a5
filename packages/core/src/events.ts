import type { Decision, DecisionSource } from './decision';
import type { StoreError } from './errors';
import { identifierKind } from './keys';
import type { FailurePolicy, Logger } from './options';

/*
 * What a limiter tells its listeners (the `onEvent` option, limiter.subscribe()): every decision, refunds,
 * store errors and shadow denials. A listener sees an identifier's kind ('ip', 'user', ...) and, only when
 * the limiter was made with `events: { identifiers: true }`, the identifier itself: identifiers are personal
 * data, and metrics labelled by them would grow without bound. With no listener, a decision costs one
 * property read; with one, the event object and the calls (measured in `npm run bench:policies`).
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

export type LimiterEvent =
  | DecisionEvent
  | RefundEvent
  | { type: 'store-error'; limiter: string; error: StoreError; policy: FailurePolicy }
  | { type: 'shadow-deny'; limiter: string; decision: Decision };

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

  emit(event: LimiterEvent): void {
    for (const listener of this.listeners) {
      try {
        listener(event);
      } catch (err) {
        this.logger.warn(`floodgate: an event listener threw: ${err instanceof Error ? err.message : String(err)}`);
      }
    }
  }

  decision(d: Decision, plan: string | undefined, latencyMs: number | undefined): void {
    const identifier = d.identifier ?? d.states[0]?.identifier;
    const event: DecisionEvent = {
      type: 'decision',
      limiter: this.limiter,
      outcome: outcomeOf(d),
      source: d.source,
      shadow: d.shadowDenied === true,
      rule: Number.isFinite(d.limit) ? { limit: d.limit, windowMs: d.windowMs } : undefined,
      kind: identifier === undefined ? '' : identifierKind(identifier),
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
}
