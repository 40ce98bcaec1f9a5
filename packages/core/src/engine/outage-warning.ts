import type { StoreError } from '../kernel/errors';
import type { Logger } from '../kernel/logger';
import type { FailurePolicy } from '../config/failure-policy';
import { storeFailureWarning } from '../stores/deadline';

/*
 * What a limiter says while its store fails it (docs/operating.md, "When Redis cannot be reached"): one
 * warning when an outage begins, in plain words (which Redis, why, and what the failure policy does
 * meanwhile), then, while it lasts, at most one line a minute with how many checks the policy decided since.
 * The outage ends when the store answers; the next one warns again.
 */

/** How often a limiter repeats that its store is still failing: once a minute. */
export const OUTAGE_REPEAT_MS = 60_000;

/** What the failure policy does with a check the store cannot decide, in a user's words. */
const MEANWHILE: Record<FailurePolicy, string> = {
  open: "failure policy 'open' admits the requests it cannot decide, up to each rule's limit per identifier from this process",
  closed: "failure policy 'closed' denies them (503 with Retry-After in the adapters)",
  local: "failure policy 'local' decides them in this process's memory, with the same rules",
};

/** Kinds that mean the server could not be reached (as opposed to a slow server or an error reply). */
const UNREACHABLE = new Set(['unavailable', 'circuit-open']);

/** Where the limiter's store is, and why the client last failed to connect: read when a warning is written. */
export interface StoreWhereabouts {
  readonly address?: string;
  lastConnectionError?(): string | undefined;
}

export class OutageWarning {
  /** Whether an outage is under way (a failure since the store last answered). */
  private failing = false;
  private unsupportedWarned = false;
  /** When the last line was logged (operational time), and the checks decided by the policy since. */
  private loggedAt = 0;
  private since = 0;

  constructor(
    private readonly limiter: string,
    private readonly policy: FailurePolicy,
    private readonly logger: Logger,
    private readonly now: () => number,
    private readonly where: StoreWhereabouts | undefined,
  ) {}

  /** The store answered: the outage is over. */
  answered(): void {
    this.failing = false;
  }

  /** A check the store could not decide. */
  failed(error: StoreError): void {
    const now = this.now();
    // A server that cannot run the scripts is said so even when another failure came first.
    if (!this.failing || (error.kind === 'unsupported' && !this.unsupportedWarned)) {
      this.failing = true;
      if (error.kind === 'unsupported') this.unsupportedWarned = true;
      this.loggedAt = now;
      this.since = 0;
      this.logger.warn(this.first(error));
      return;
    }
    this.since++;
    if (now - this.loggedAt < OUTAGE_REPEAT_MS) return;
    const seconds = Math.round((now - this.loggedAt) / 1000);
    this.logger.warn(
      `floodgate: limiter '${this.limiter}' ${this.unreachable(error) ? `still cannot reach ${this.redis()}` : `is still failing (${error.message})`}: ` +
        `${this.since} check${this.since === 1 ? '' : 's'} decided by failure policy '${this.policy}' in the last ${seconds} s ` +
        `(repeated at most once a minute while it lasts)`,
    );
    this.loggedAt = now;
    this.since = 0;
  }

  private first(error: StoreError): string {
    if (!this.unreachable(error)) return storeFailureWarning(`limiter '${this.limiter}'`, error, this.policy);
    const cause = this.where?.lastConnectionError?.() ?? error.message.replace(/^floodgate: /, '');
    return (
      `floodgate: limiter '${this.limiter}' cannot reach ${this.redis()} (${cause}). Until it can, ${MEANWHILE[this.policy]}; ` +
      'this repeats at most once a minute, with counts, while it lasts (docs/operating.md)'
    );
  }

  private unreachable(error: StoreError): boolean {
    return UNREACHABLE.has(error.kind);
  }

  private redis(): string {
    const address = this.where?.address;
    return address === undefined ? 'its Redis' : `its Redis at ${address}`;
  }
}
