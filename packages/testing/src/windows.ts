/*
 * Fixed windows on the real clock, for the few tests whose subject is Redis's own TIME (a key's life, the
 * scripts' time path): fixed-window aligns its windows to the epoch, so a window of a round length (a
 * minute, an hour) ends at the top of every minute or hour, and a test running then sees two windows. A
 * window of about an hour whose current window began minutes ago cannot end during a test.
 */

/**
 * A fixed window's length in ms, of at least `aboutMs` (22 minutes or more), whose window holding `nowMs`
 * began at most `nowMs / aboutMs` ms before it (under 9 minutes for an hour, today): the next boundary is
 * more than 50 minutes away for an hour. `nowMs` is the real time (Date.now(), or Redis's TIME).
 */
export function windowClearOfBoundary(nowMs: number, aboutMs = 3_600_000): number {
  if (!Number.isSafeInteger(nowMs) || aboutMs < 22 * 60_000)
    throw new RangeError('windowClearOfBoundary: a real time, and a window of 22 minutes or more');
  // k windows of w fit before now with less than k ms over: floor(now / w) = k while now < (k + 1) * w.
  const k = Math.floor(nowMs / aboutMs);
  return Math.floor(nowMs / k);
}
