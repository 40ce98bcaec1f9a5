/*
 * The logger Floodgate writes its warnings to (the `logger` option): an application's, or
 * process.emitWarning; never the console.
 */

export interface Logger {
  warn(message: string): void;
}

const defaultLogger: Logger = {
  warn: (message) => process.emitWarning(message, { code: 'FLOODGATE' }),
};

/**
 * The logger as Floodgate calls it: a warn() that throws is swallowed, so a broken logger can never turn
 * a store failure (or any warning) into a rejected check or a failed request.
 */
export function safeLogger(logger: Logger | undefined): Logger {
  if (logger === undefined) return defaultLogger;
  return {
    warn: (message) => {
      try {
        logger.warn(message);
      } catch {
        // the warning is lost; the decision is not
      }
    },
  };
}
