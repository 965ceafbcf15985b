/**
 * Runs the conformance suite's handlers behind native worker threads: the subscription is a worker one
 * (`workers`, `handler` module), whose threads pop, run the delivery rules and settle each event, while the
 * handler each test wrote runs on the main thread, called over a BroadcastChannel by the bridge module
 * (fixtures/bridge-handler.ts). What the suite observes of deliveries is then what worker threads did.
 */
import { BroadcastChannel } from 'node:worker_threads';
import { isRetryable, type DeliveryContext, type EventEnvelope, type Subscription } from '../../src/index.js';
import { uniqueName } from '../helpers/wait.js';
import type { ConformanceBus, OrderHandler } from '../../src/conformance/index.js';

type Call = { kind: 'call'; call: string; event: EventEnvelope; ctx: DeliveryContext };

const BRIDGE = new URL('./fixtures/bridge-handler.ts', import.meta.url);

/** Subscribes `handler` to `type` on `bus` through `workers` worker threads running the bridge module. */
export async function subscribeInWorkers(workers: number, bus: ConformanceBus, type: 'order.created', options: Record<string, unknown>, handler: OrderHandler): Promise<Subscription> {
  const name = uniqueName('bridge');
  const channel = new BroadcastChannel(name);
  channel.unref();
  let closed = false;
  channel.onmessage = (m) => {
    const msg = (m as { data: Call | { kind: 'reply' } }).data;
    if (msg.kind !== 'call') return;
    const { call } = msg;
    // A handler that settles after the subscription closed has no thread left to hear it.
    const reply = (r: object) => {
      if (!closed) channel.postMessage({ kind: 'reply', call, ...r });
    };
    Promise.resolve()
      .then(() => handler(msg.event as Parameters<typeof handler>[0], msg.ctx))
      .then(
        () => reply({ ok: true }),
        (err: unknown) => reply({ ok: false, name: (err as Error)?.name ?? 'Error', message: (err as Error)?.message ?? String(err), retryable: isRetryable(err) }),
      );
  };
  let sub: Subscription;
  try {
    sub = await bus.subscribe(type, { ...options, workers, handler: BRIDGE, workerData: { channel: name } } as never);
  } catch (err) {
    closed = true;
    channel.close();
    throw err;
  }
  return {
    type: sub.type,
    group: sub.group,
    consumer: sub.consumer,
    health: (options) => sub.health(options),
    close: () =>
      sub.close().finally(() => {
        closed = true;
        channel.close();
      }),
  };
}
