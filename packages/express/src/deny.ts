import type { Response } from 'express';

/**
 * Sends a denial Floodgate made (its headers are already set). A default or string `message` comes as JSON
 * text already (`json`): it is written with Node's own `end()`, without res.json's stringify or res.send's
 * ETag and freshness checks (a 429 is never cached, and those were a tenth of a denial's CPU). An object
 * `message` goes through res.json, so the app's 'json spaces' and 'json replacer' settings apply to it.
 */
export function sendDenial(res: Response, outcome: { status: number; body?: object; json?: string }): void {
  if (outcome.json === undefined) return void res.status(outcome.status).json(outcome.body);
  res.statusCode = outcome.status;
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  // Set, not left to Node: a HEAD response carries the length its GET would have.
  res.setHeader('Content-Length', Buffer.byteLength(outcome.json));
  res.end(outcome.json);
}
