import type { Decision } from '../kernel/decision';
import { isThenable } from '../kernel/thenable';
import { defaultDenyMessage, errorBody, retryAfterSeconds, UNAVAILABLE_MESSAGE, type HeaderList } from './headers';
import type { MaybePromise } from './option-types';
import type { HttpOutcome } from './outcome';

/*
 * The responses a limiter refuses with: a denial (`statusCode`, `Retry-After`, the message or body asked
 * for), the deny list's refusal (`denyStatusCode`, no rate-limit headers: waiting changes nothing) and a
 * store failure under `failure: 'closed'` (503, no counts, no driver text).
 */

type Message<Req> = string | object | ((req: Req, decision: Decision) => MaybePromise<string | object>) | undefined;

const UNAVAILABLE_JSON = JSON.stringify(errorBody(503, UNAVAILABLE_MESSAGE));

export class Denials<Req> {
  // The last default or string body as JSON: a client that stays denied gets the same text for a second.
  private lastText: string | undefined;
  private lastJson = '';
  private lastRetryS = -1;
  private lastDefault = '';

  constructor(
    private readonly statusCode: number,
    private readonly denyStatusCode: number,
    private readonly message: Message<Req>,
  ) {}

  /** A denial: `Retry-After` added to `set`, the body from `message` (a function's may be a promise). */
  denial(req: Req, decision: Decision, retryS: number, set: HeaderList, append: HeaderList): MaybePromise<HttpOutcome> {
    set.push(['Retry-After', String(retryS)]);
    const message = this.message;
    const custom = typeof message === 'function' ? message(req, decision) : message;
    if (!isThenable(custom)) return this.denied(custom, retryS, set, append, decision);
    return Promise.resolve(custom).then((c) => this.denied(c, retryS, set, append, decision));
  }

  /** The deny list refused the request. Only a message function applies (it sees reason 'listed'): a string or object message is about the limit. */
  listed(req: Req, decision: Decision): MaybePromise<HttpOutcome> {
    const custom = typeof this.message === 'function' ? this.message(req, decision) : undefined;
    if (!isThenable(custom)) return this.listedBody(custom, decision);
    return Promise.resolve(custom).then((c) => this.listedBody(c, decision));
  }

  /** failure 'closed': the store could not decide, so no counts to report and no driver text to leak. */
  unavailable(decision: Decision): HttpOutcome {
    return {
      action: 'deny',
      status: 503,
      set: [['Retry-After', String(retryAfterSeconds(decision.retryAfterMs))]],
      append: [],
      body: errorBody(503, UNAVAILABLE_MESSAGE),
      json: UNAVAILABLE_JSON,
      decision,
    };
  }

  private denied(custom: unknown, retryS: number, set: HeaderList, append: HeaderList, decision: Decision): HttpOutcome {
    const statusCode = this.statusCode;
    // A fresh body object each time: the framework (Koa's ctx.body) may hand it to code that changes it,
    // and a later middleware's edit must not reach the next client's denial.
    if (typeof custom === 'object' && custom !== null)
      return { action: 'deny', status: statusCode, set, append, body: structuredClone(custom), decision };
    if (typeof custom !== 'string' && retryS !== this.lastRetryS) {
      this.lastRetryS = retryS;
      this.lastDefault = defaultDenyMessage(retryS);
    }
    const text = typeof custom === 'string' ? custom : this.lastDefault;
    const body = errorBody(statusCode, text);
    if (text !== this.lastText) {
      this.lastText = text;
      this.lastJson = JSON.stringify(body);
    }
    return { action: 'deny', status: statusCode, set, append, body, json: this.lastJson, decision };
  }

  private listedBody(custom: unknown, decision: Decision): HttpOutcome {
    const body =
      typeof custom === 'object' && custom !== null
        ? structuredClone(custom)
        : errorBody(this.denyStatusCode, typeof custom === 'string' ? custom : 'Forbidden');
    return { action: 'deny', status: this.denyStatusCode, set: [], append: [], body, decision };
  }
}
