import dc from 'node:diagnostics_channel';
import { describe, expect, it } from 'vitest';
import { DeliveryEngine, type RetryVerdict } from '../../src/delivery-engine.js';
import { NonRetryableError } from '../../src/errors.js';
import type { EventEnvelope } from '../../src/envelope.js';
import type { OutcomeMessage } from '../../src/diagnostics.js';
import type { DeadLetter, DeliveryContext, DeliveryHandler } from '../../src/transport.js';

/** A queue-fed engine recording what each verdict did. */
class QueueEngine extends DeliveryEngine<number> {
  readonly queue: number[] = [];
  readonly log: string[] = [];
  readonly deadLetters: DeadLetter[] = [];
  constructor(handler: DeliveryHandler, concurrency = 1, maxDeliveries = 2) {
    super({ group: 'g', concurrency, maxDeliveries, backoff: { initialMs: 10, maxMs: 10, multiplier: 1, jitter: 0 } }, handler);
  }
  protected startNext(): boolean {
    const n = this.queue.shift();
    if (n === undefined) return false;
    const env = { id: `e${n}`, type: 't', source: 's', time: 0, data: n } as EventEnvelope;
    this.startHandler(n, 0, env, { attempt: n >= 100 ? 2 : 1, group: 'g', consumer: 'c', partition: 0 });
    return true;
  }
  protected succeeded(n: number): void {
    this.log.push(`ack ${n}`);
  }
  protected retry(n: number, _i: number, _env: EventEnvelope, _ctx: DeliveryContext, next: RetryVerdict): void {
    this.log.push(`retry ${n} as ${next.attempt} after ${next.delayMs}`);
  }
  protected dead(n: number, _i: number, _env: EventEnvelope, dl: DeadLetter): void {
    this.deadLetters.push(dl);
    this.log.push(`dead ${n}`);
  }
  protected handBack(n: number, _i: number, _env: EventEnvelope, ctx: DeliveryContext): void {
    this.log.push(`back ${n} as ${ctx.attempt + 1}`);
  }
  get runningNow(): number {
    return this.running;
  }
}

describe('DeliveryEngine', () => {
  it('runs at most concurrency handlers and applies the verdict to each outcome', async () => {
    const release: (() => void)[] = [];
    let peak = 0;
    let now = 0;
    const engine = new QueueEngine(async (env) => {
      peak = Math.max(peak, ++now);
      await new Promise<void>((r) => release.push(r));
      now--;
      if (env.data === 2) throw new Error('boom');
      if (env.data === 3) throw new NonRetryableError('bad');
    }, 2);
    engine.queue.push(1, 2, 3);
    engine.pump();
    expect(engine.runningNow).toBe(2);
    while (release.length > 0 || engine.queue.length > 0) {
      release.shift()?.();
      await new Promise((r) => setImmediate(r));
    }
    expect(peak).toBe(2);
    expect(engine.log).toEqual(['ack 1', 'retry 2 as 2 after 10', 'dead 3']);
    expect(engine.deadLetters[0]).toMatchObject({ id: 'e3', group: 'g', attempts: 1 });
  });

  it('a synchronous handler ends before pump returns, and its failure on the last attempt dead-letters', () => {
    const engine = new QueueEngine((env) => {
      if (env.data === 100) throw new Error('last');
    });
    engine.queue.push(1, 100);
    engine.pump();
    expect(engine.log).toEqual(['ack 1', 'dead 100']);
    expect(engine.runningNow).toBe(0);
  });

  it('a drain that runs out gives up running handlers: the last attempt is dead-lettered, others handed back', async () => {
    const never = new Promise<void>(() => {});
    let finish!: () => void;
    const late = new Promise<void>((r) => (finish = r));
    const engine = new QueueEngine((env) => (env.data === 1 ? late : never), 2);
    engine.queue.push(1, 100);
    engine.pump();
    engine.stopTaking();
    expect(await engine.drain(20)).toBe(true);
    expect(engine.giveUpRunning(20)).toBe(2);
    expect(engine.log).toEqual(['back 1 as 2', 'dead 100']);
    expect(engine.deadLetters[0]!.error).toMatch(/drainTimeoutMs 20/);
    finish(); // its outcome after the give-up is ignored
    await late;
    await new Promise((r) => setImmediate(r));
    expect(engine.log).toHaveLength(2);
    expect(engine.runningNow).toBe(0);
  });

  it('a drain resolves as soon as the last handler ends', async () => {
    let finish!: () => void;
    const engine = new QueueEngine(() => new Promise<void>((r) => (finish = r)));
    engine.queue.push(1);
    engine.pump();
    const t0 = performance.now();
    const draining = engine.drain(10_000);
    finish();
    expect(await draining).toBe(false);
    expect(performance.now() - t0).toBeLessThan(1000);
  });

  it('times a run for the outcome channels only when one has a subscriber as it starts', async () => {
    const seen: string[] = [];
    const record = (name: string) => (m: unknown) => {
      const { event, durationMs } = m as OutcomeMessage;
      seen.push(`${name} ${String(event.data)} ${durationMs === undefined ? 'untimed' : durationMs >= 0 ? 'timed' : 'negative'}`);
    };
    const ack = record('ack');
    const retry = record('retry');
    const dead = record('dead');
    const gates: (() => void)[] = [];
    const engine = new QueueEngine((env) => {
      if (env.data === 1) return new Promise<void>((r) => gates.push(r)); // ends while subscribed: started untimed
      if (env.data === 3) return new Promise<void>((r) => setTimeout(r, 20)); // async, subscribed from its start
      if (env.data === 4) throw new Error('retried');
      if (env.data === 100) return new Promise<void>(() => {}); // given up by the drain, on its last attempt
    }, 4);
    engine.queue.push(1);
    engine.pump();
    dc.subscribe('eventlane:ack', ack);
    dc.subscribe('eventlane:retry', retry);
    dc.subscribe('eventlane:dead-letter', dead);
    try {
      engine.queue.push(2, 3, 4, 100);
      engine.pump();
      gates.shift()!();
      await new Promise((r) => setTimeout(r, 40));
      engine.stopTaking();
      await engine.drain(5);
      engine.giveUpRunning(5);
    } finally {
      dc.unsubscribe('eventlane:ack', ack);
      dc.unsubscribe('eventlane:retry', retry);
      dc.unsubscribe('eventlane:dead-letter', dead);
    }
    expect(seen.sort()).toEqual(['ack 1 untimed', 'ack 2 timed', 'ack 3 timed', 'dead 100 timed', 'retry 4 timed']);
  });

  it('reports how long a run took, to its outcome', async () => {
    let ms: number | undefined;
    const ack = (m: unknown) => void (ms = (m as OutcomeMessage).durationMs);
    dc.subscribe('eventlane:ack', ack);
    try {
      const engine = new QueueEngine(() => new Promise<void>((r) => setTimeout(r, 30)));
      engine.queue.push(1);
      engine.pump();
      while (ms === undefined) await new Promise((r) => setTimeout(r, 5));
    } finally {
      dc.unsubscribe('eventlane:ack', ack);
    }
    expect(ms).toBeGreaterThanOrEqual(25); // timers may fire a little early
  });
});
