import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createEventBus, defineEvents } from '../../src/index.js';
import { LimitedLog } from '../../src/log-limit.js';
import type { Logger } from '../../src/logger.js';

const fixture = fileURLToPath(new URL('./fixtures/failing-handler.ts', import.meta.url));

/** Runs the fixture (a handler throwing ReferenceError) with its logger option; returns its stderr. */
function stderrOf(loggerArg: 'default' | 'false'): string {
  const r = spawnSync(process.execPath, ['--import', 'tsx', fixture, loggerArg], { encoding: 'utf8', timeout: 60_000 });
  expect(r.status, r.stderr).toBe(0);
  return r.stderr;
}

/** A logger that keeps each line as [level, fields, message]. */
function capture(): Logger & { lines: [string, Record<string, unknown>, string | undefined][] } {
  const lines: [string, Record<string, unknown>, string | undefined][] = [];
  const at = (level: string) => (obj: object, msg?: string) => void lines.push([level, obj as Record<string, unknown>, msg]);
  return { lines, debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
}

describe('failures are visible by default', () => {
  it('with no logger option, a throwing handler prints its error with its stack to stderr', () => {
    const err = stderrOf('default');
    const lines = err
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    const dead = lines.find((l) => l['msg'] === 'event dead-lettered');
    expect(dead, err).toBeDefined();
    expect(dead).toMatchObject({ level: 40, type: 'order.placed', group: 'billing', attempt: 2, maxDeliveries: 2 });
    expect(dead!['error']).toMatchObject({ name: 'ReferenceError', message: 'chargeCard is not defined' });
    expect(String((dead!['error'] as { stack: string }).stack)).toMatch(/failing-handler\.ts/);
    // The first failure (a retry follows) is logged at info: below the default level.
    expect(lines.filter((l) => l['msg'] === 'handler failed; the event will be retried')).toHaveLength(1);
  });

  it('logger: false prints nothing', () => {
    expect(stderrOf('false')).toBe('');
  });

  it('a retry is logged at info, the retry before the last attempt and the dead letter at warn', async () => {
    const logger = capture();
    const events = defineEvents({ tick: z.object({ n: z.number() }) });
    const bus = await createEventBus({ service: 's', events, transport: { type: 'memory' }, logger });
    await bus.subscribe('tick', { group: 'g', maxDeliveries: 3, retry: { backoff: { initialMs: 1, maxMs: 1 } } }, () => {
      throw new TypeError('no');
    });
    await bus.publish('tick', { n: 1 });
    await expect(bus.idle({ timeoutMs: 5000 })).resolves.toBeUndefined();
    await bus.close();
    const failures = logger.lines.filter(([, , msg]) => msg !== undefined && /retried|dead-lettered/.test(msg));
    expect(failures.map(([level, f, msg]) => [level, f['attempt'], msg])).toEqual([
      ['info', 1, 'handler failed; the event will be retried'],
      ['warn', 2, 'handler failed; the event will be retried'],
      ['warn', 3, 'event dead-lettered'],
    ]);
  });
});

describe('LimitedLog', () => {
  it('lets a burst of one kind through, then reports how many lines it held back', async () => {
    const logger = capture();
    const log = new LimitedLog(logger, { burst: 3, windowMs: 50 });
    for (let i = 0; i < 10; i++) log.log('warn', { i }, 'same');
    log.log('warn', {}, 'other');
    expect(logger.lines.map(([, , m]) => m)).toEqual(['same', 'same', 'same', 'other']);
    await new Promise((r) => setTimeout(r, 120));
    expect(logger.lines.at(-1)).toEqual(['warn', { suppressed: 7, kind: 'same', windowMs: 50 }, 'repeated log lines suppressed']);
    log.log('warn', {}, 'same'); // a new window
    expect(logger.lines.at(-1)![2]).toBe('same');
  });
});
