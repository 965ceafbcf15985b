/**
 * What the native transport tests share: the `tick` event map, payload helpers, and a per-describe bus
 * factory on one implementation (addon or JS core) whose buses are closed after each test.
 */
import { afterEach } from 'vitest';
import { z } from 'zod';
import { createEventBus, defineEvents, type EventBus } from '../../src/index.js';
import type { NativeTransport } from '../../transports/native/index.js';
import { uniqueName } from '../helpers/wait.js';

export const events = defineEvents({
  tick: z.object({ seq: z.number().int(), pad: z.string().optional() }),
});
export type Bus = EventBus<typeof events>;
export const ticks = (n: number, from = 0) => Array.from({ length: n }, (_, i) => ({ seq: from + i }));
export const fixture = (name: string) => new URL(`./fixtures/${name}`, import.meta.url);
export const transportOf = (b: Bus) => b.transport as NativeTransport;

/** Call inside a describe: `bus(transport, extra)` opens a native bus on `implementation`, closed after each test. */
export function nativeBuses(implementation: 'native' | 'js', service: string): (transport?: Record<string, unknown>, extra?: Record<string, unknown>) => Promise<Bus> {
  const open: Bus[] = [];
  afterEach(async () => {
    await Promise.allSettled(open.splice(0).map((b) => b.close()));
  });
  return async (transport = {}, extra = {}) => {
    const b = await createEventBus({
      service,
      events,
      transport: { type: 'native', implementation, name: uniqueName(service), ...transport },
      ...extra,
    });
    open.push(b);
    return b;
  };
}

/** A logger that keeps error() calls (and drops the rest). */
export function errorLog() {
  const errors: { obj: Record<string, unknown>; msg: string }[] = [];
  const logger = {
    level: 'error',
    error: (obj: Record<string, unknown>, msg: string) => void errors.push({ obj, msg }),
    warn() {},
    info() {},
    debug() {},
    trace() {},
    fatal() {},
    child() {
      return logger;
    },
  };
  return { errors, logger };
}
