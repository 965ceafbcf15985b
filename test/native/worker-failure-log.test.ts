/**
 * A worker thread's handler failures reach the bus's log as a main-thread consumer's do: each retry and each
 * dead letter with the event's id, type, group, attempt and the error with its stack; a dead letter once.
 */
import { describe, expect, it } from 'vitest';
import { waitFor } from '../helpers/wait.js';
import { fixture, nativeBuses, ticks } from './harness.js';

type Line = { level: string; obj: Record<string, unknown>; msg: string | undefined };

function recording(): { lines: Line[]; logger: Record<'debug' | 'info' | 'warn' | 'error', (obj: object, msg?: string) => void> } {
  const lines: Line[] = [];
  const at = (level: string) => (obj: object, msg?: string) => void lines.push({ level, obj: obj as Record<string, unknown>, msg });
  return { lines, logger: { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') } };
}

describe.each(['native', 'js'] as const)('worker-thread failures in the log (%s)', (implementation) => {
  const bus = nativeBuses(implementation, `wfail-${implementation}`);

  it('logs each retry and each dead letter of a worker handler, with the error and its stack', async () => {
    const { lines, logger } = recording();
    const b = await bus({ partitions: 1 }, { logger });
    const counters = new SharedArrayBuffer(8);
    await b.subscribe('tick', { group: 'w', workers: 1, maxDeliveries: 3, retry: { backoff: { initialMs: 5, maxMs: 10 } }, handler: fixture('flaky-handler.mjs'), workerData: { counters } });
    await b.publishMany('tick', ticks(5));
    await b.idle({ timeoutMs: 15_000 });
    const retried = lines.filter((l) => l.msg === 'handler failed; the event will be retried');
    const dead = lines.filter((l) => l.msg === 'event dead-lettered');
    // Seq 1..4 fail once; seq 0 fails three times (two retries, then dead-lettered). Fewer lines than the log's
    // limit of one kind per window.
    expect(retried).toHaveLength(4 + 2);
    expect(dead).toHaveLength(1);
    expect(dead[0]!.obj).toMatchObject({ type: 'tick', group: 'w', attempt: 3, maxDeliveries: 3 });
    expect(dead[0]!.obj['error']).toMatchObject({ name: 'Error', message: 'poison 0' });
    expect(String((dead[0]!.obj['error'] as { stack: string }).stack)).toMatch(/flaky-handler\.mjs/);
    const first = retried.find((l) => l.obj['attempt'] === 1)!;
    expect(first.level).toBe('info');
    expect(first.obj).toMatchObject({ type: 'tick', group: 'w', nextAttempt: 2 });
    expect(typeof first.obj['id']).toBe('string');
    await waitFor(async () => (await b.transport.deadLetters!('tick', 'w')).length === 1, 5000, 'the dead letters kept');
  });
});
