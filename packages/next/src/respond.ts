import type { HeaderList, HttpOutcome } from '@floodgate/core/adapter';

/** The headers Floodgate writes for an outcome, onto `headers`: single ones set, list ones appended. */
export function writeHeaders(headers: Headers, set: HeaderList, append: HeaderList = []): Headers {
  for (const [name, value] of set) headers.set(name, value);
  for (const [name, value] of append) headers.append(name, value);
  return headers;
}

/** A denial Floodgate made: its status, its headers, and its body as JSON (as every adapter sends it). */
export function deny(outcome: HttpOutcome): Response {
  const headers = writeHeaders(new Headers(), outcome.set, outcome.append);
  headers.set('Content-Type', 'application/json; charset=utf-8');
  return new Response(outcome.json ?? JSON.stringify(outcome.body), { status: outcome.status, headers });
}
