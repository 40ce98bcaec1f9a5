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

/** The response with Floodgate's headers: on it when they can be written, else on a copy (Response.redirect's are immutable). */
export function withHeaders(response: Response, set: HeaderList, append: HeaderList): Response {
  if (set.length === 0 && append.length === 0) return response;
  try {
    writeHeaders(response.headers, set, append);
    return response;
  } catch {
    const copy = new Response(response.body, response);
    writeHeaders(copy.headers, set, append);
    return copy;
  }
}
