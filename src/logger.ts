/**
 * Logger injection. Pass a pino logger (or anything with the same level methods); silent by default.
 */
export interface Logger {
  debug(obj: object, msg?: string): void;
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
  child?(bindings: Record<string, unknown>): Logger;
}

const noop = (): void => {};

/** The default: drops everything. */
export const silentLogger: Logger = { debug: noop, info: noop, warn: noop, error: noop };

/** A child logger with `bindings` when the logger supports it, else the logger itself. */
export function childLogger(logger: Logger, bindings: Record<string, unknown>): Logger {
  return typeof logger.child === 'function' ? logger.child(bindings) : logger;
}
