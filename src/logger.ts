/**
 * Logger injection. Pass a pino logger (or anything with the same level methods); `false` silences the bus.
 * By default a bus logs warnings and errors to stderr (`defaultLogger`).
 */
import pino from 'pino';
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

let shared: Logger | undefined;

/** The default: pino at level `warn`, written to stderr synchronously (lines are not lost at exit); one per process. */
export function defaultLogger(): Logger {
  return (shared ??= pino({ level: 'warn' }, pino.destination({ dest: 2, sync: true })));
}

/** The logger of a bus: `false` silent, a given one as it is, none the default. */
export function busLogger(given: Logger | false | undefined): Logger {
  return given === false ? silentLogger : (given ?? defaultLogger());
}

/** A child logger with `bindings` when the logger supports it, else the logger itself. */
export function childLogger(logger: Logger, bindings: Record<string, unknown>): Logger {
  return typeof logger.child === 'function' ? logger.child(bindings) : logger;
}
