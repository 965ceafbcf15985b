/**
 * `bus.health()` on the native transport: main-thread subscriptions report their engine's last delivery;
 * worker-thread subscriptions report `reconnecting` while a thread that died is being replaced.
 */
import { describe, expect, it } from 'vitest';
import type { SubscriptionHealth } from '../../src/index.js';
import { waitFor } from '../helpers/wait.js';
import { fixture, nativeBuses, ticks, type Bus } from './harness.js';

describe.each(['native', 'js'] as const)('bus.health() on native (%s)', (implementation) => {
  const bus = nativeBuses(implementation, `health-${implementation}`);

  it('a main-thread subscription runs and tells its last delivery', async () => {
    const b = await bus({ partitions: 2 });
    let handled = 0;
    await b.subscribe('tick', { group: 'main' }, () => void handled++);
    expect(b.health()).toMatchObject({ ok: true, transport: { type: 'native', connected: true } });
    const published = Date.now();
    await b.publishMany('tick', ticks(50));
    await waitFor(() => handled === 50, 10_000, 'the deliveries');
    const [s] = b.health().subscriptions;
    expect(s).toMatchObject({ type: 'tick', group: 'main', state: 'running' });
    expect(s!.lastDeliveryAt).toBeGreaterThanOrEqual(published);
  });

  it('a worker-thread subscription is reconnecting while a dead thread is replaced, and running once the new one is ready', async () => {
    const box: { b?: Bus } = {};
    let atRespawn: SubscriptionHealth | undefined;
    const logger = {
      debug() {},
      info() {},
      warn() {},
      error(_obj: object, msg?: string) {
        if (msg !== undefined && /starting a new thread/.test(msg)) atRespawn = box.b?.health().subscriptions[0];
      },
    };
    const b = (box.b = await bus({ partitions: 1 }, { logger }));
    const counters = new SharedArrayBuffer(12);
    await b.subscribe('tick', { group: 'w', workers: 1, handler: fixture('crash-handler.mjs'), workerData: { counters, crashAt: 5 } });
    expect(b.health().subscriptions[0]).toMatchObject({ state: 'running', lastDeliveryAt: undefined });
    await b.publishMany('tick', ticks(20));
    await waitFor(() => atRespawn !== undefined, 10_000, 'the thread to die and be replaced');
    expect(atRespawn!.state).toBe('reconnecting');
    await waitFor(() => b.health().subscriptions[0]!.state === 'running', 10_000, 'the new thread to be ready');
    expect(b.health().ok).toBe(true);
  });
});
