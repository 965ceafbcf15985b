/**
 * `bus.close()`'s sequence: send what was published before it (up to `drainTimeoutMs`), drain the
 * subscriptions (their handlers may still publish, and those events are sent), refuse publishes from then on,
 * send what is left, close the transport (which rejects writes still waiting for it) and keep the bus as the
 * process's last closed one (`keepClosedBus` in src/v8-shapes.ts). The bus calls it once.
 */
import type { Subscription } from './bus-types.js';
import type { Logger } from './logger.js';
import type { Publisher } from './publisher.js';
import type { Transport } from './transport.js';
import { keepClosedBus } from './v8-shapes.js';

/** What close() works on: the bus (kept by `keepClosedBus` once closed) and the parts it drains and closes. */
export interface ClosingBus {
  readonly bus: object;
  readonly publisher: Publisher;
  readonly subscriptions: ReadonlySet<Subscription>;
  readonly transport: Transport;
  readonly drainTimeoutMs: number;
  readonly logger: Logger;
}

export async function closeBus(c: ClosingBus): Promise<void> {
  const { publisher, drainTimeoutMs: drainMs } = c;
  const batcher = publisher.batcher;
  // What was published before close() goes first, while the subscriptions still consume (in-process: their
  // handlers may take it before they stop).
  const stuck = await late(
    Promise.allSettled([...publisher.bulkCalls]).then(() => batcher.flushAll()),
    drainMs,
  );
  // The handlers still running are drained, and may publish meanwhile: a handler's next event is sent, not
  // refused with ClosedError (which would fail the handler, and lose its event with the bus's retry timers).
  await Promise.allSettled([...c.subscriptions].map((s) => s.close()));
  publisher.closed = true;
  const sent = sendAccepted(publisher);
  // Publishes already stuck for drainTimeoutMs get no second wait.
  if (stuck || (await late(sent, drainMs))) {
    c.logger.warn({ drainTimeoutMs: drainMs }, 'close(): publishes still waiting for the transport after drainTimeoutMs; closing it rejects them');
  }
  await c.transport.close();
  await sent;
  c.logger.debug({}, 'event bus closed'); // the bus's logger names the service already
  keepClosedBus(c.bus);
}

/** Publishes accepted before close (bulk calls' slices, buffered and waiting events), sent and settled. */
async function sendAccepted(publisher: Publisher): Promise<void> {
  await Promise.allSettled([...publisher.bulkCalls]);
  await publisher.batcher.close();
}

/**
 * Waits up to `ms` for `sending`; true when it had not settled by then. A write waiting for room that only
 * this bus's own stuck consumers could make (native `block`) would hold close() for the transport's
 * publishTimeoutMs (30 s); closing the transport ends such writes: their publishes reject with ClosedError.
 */
async function late(sending: Promise<void>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = await Promise.race([sending.then(() => false), new Promise<boolean>((resolve) => (timer = setTimeout(resolve, ms, true)))]);
  clearTimeout(timer);
  return late;
}
