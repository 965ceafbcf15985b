/**
 * @moleculer/channels peer rows (its Redis Streams adapter in a local moleculer ServiceBroker), driven as its
 * documentation gives: `broker.sendToChannel` per event (it has no bulk send; PEER_CONCURRENCY calls in
 * flight where many are published) and a channel handler with `maxInFlight: PEER_CONCURRENCY`. The stream is
 * `<adapter prefix>.<channel>`, the prefix under the iteration's key prefix, so the runner deletes it with the
 * iteration's own keys. The packages are imported when a row runs: without them installed the scenarios load.
 */
import type { Middleware as BrokerMiddleware, ServiceBroker, ServiceSchema } from 'moleculer';
import { open, verified } from '../baselines/redis.js';
import { mainThreadLatency, type LatencyPath } from '../lib/latency-run.js';
import { DeliveryTracker, sizedPayloads, type SizedPayload } from '../lib/payload.js';
import type { Measured, RunContext } from '../lib/types.js';
import { inFlight, PEER_CONCURRENCY } from './shared.js';

const CHANNEL = 'bench';
const GROUP = 'g';

/** The broker with the channels middleware added: `sendToChannel` (the middleware's documented send method). */
type ChannelBroker = ServiceBroker & { sendToChannel(channel: string, payload: unknown): Promise<void> };

const prefix = (ctx: RunContext) => `${ctx.config.keyPrefix}moleculer`;
const streamOf = (ctx: RunContext) => `${prefix(ctx)}.${CHANNEL}`;

/** A started local broker (no transporter, logging off) with the Redis channel adapter connected. */
async function startBroker(ctx: RunContext, service?: ServiceSchema): Promise<ChannelBroker> {
  const { ServiceBroker } = await import('moleculer');
  // Its declarations (generated from JSDoc) type the adapter options as every adapter's defaults at once.
  const { Middleware } = (await import('@moleculer/channels')) as unknown as { Middleware(opts: unknown): BrokerMiddleware };
  const broker = new ServiceBroker({
    nodeID: `bench-${process.pid}`,
    logger: false,
    middlewares: [Middleware({ adapter: { type: 'Redis', options: { redis: ctx.config.redisUrl, prefix: prefix(ctx), maxInFlight: PEER_CONCURRENCY } } })],
  }) as ChannelBroker;
  if (service) broker.createService(service);
  await broker.start();
  return broker;
}

/**
 * A service whose channel handler calls `handle` with each payload, `maxInFlight` PEER_CONCURRENCY, in group
 * GROUP. `startID: '0'` reads what the stream held before the group was made (prefilled consumption).
 */
function consumer(handle: (p: SizedPayload) => void, startID?: '0'): ServiceSchema {
  return {
    name: 'bench-consumer',
    channels: {
      [CHANNEL]: {
        group: GROUP,
        maxInFlight: PEER_CONCURRENCY,
        ...(startID ? { redis: { startID } } : {}),
        handler(payload: SizedPayload) {
          handle(payload);
        },
      },
    },
  } as unknown as ServiceSchema;
}

/** Publishes every payload with sendToChannel, PEER_CONCURRENCY calls in flight. */
function sendAll(broker: ChannelBroker, payloads: SizedPayload[]): Promise<void> {
  return inFlight(payloads.length, PEER_CONCURRENCY, (i) => broker.sendToChannel(CHANNEL, payloads[i]));
}

/** Publishing: sendToChannel timed, then the stream's entries read back with XRANGE. */
export async function moleculerPublish(ctx: RunContext): Promise<Measured> {
  const { messageCount: n, messageSize: size } = ctx.config;
  const payloads = sizedPayloads(n, size);
  const broker = await startBroker(ctx);
  const how = `sendToChannel per event, ${PEER_CONCURRENCY} calls in flight`;
  try {
    await ctx.timed(() => sendAll(broker, payloads));
  } finally {
    await broker.stop();
  }
  if (ctx.warmup) return { events: n, sent: n, received: null, bytes: n * size, verifiedBy: `${how}; warmup, not read back` };
  const r = await open(ctx);
  try {
    return await verified(r, streamOf(ctx), n, size, how);
  } finally {
    r.disconnect();
  }
}

/** Consuming: the stream prefilled (untimed), then the consuming service created and timed until it handled every event. */
export async function moleculerConsume(ctx: RunContext): Promise<Measured> {
  const { messageCount: n, messageSize: size } = ctx.config;
  const payloads = sizedPayloads(n, size);
  const broker = await startBroker(ctx);
  const tracker = new DeliveryTracker(n);
  try {
    await sendAll(broker, payloads);
    await ctx.timed(async () => {
      // On a started broker the middleware subscribes the new service's channels at once.
      broker.createService(consumer((p) => tracker.mark(p.id), '0'));
      await tracker.waitAll(10_000);
    });
    return tracker.measured(n, { bytes: tracker.unique * size, verifiedBy: 'payload ids counted in the channel handler' });
  } finally {
    await broker.stop();
  }
}

/** End-to-end latency: sendToChannel per event -> the channel handler, paced as the library's row. */
export async function moleculerEndToEnd(ctx: RunContext): Promise<Measured> {
  let broker: ChannelBroker | undefined;
  const path: LatencyPath = {
    sends: 'sendToChannel',
    async subscribe(deliver) {
      broker = await startBroker(
        ctx,
        consumer((p) => deliver(p.id)),
      );
    },
    send: (payload) => broker!.sendToChannel(CHANNEL, payload),
    async close() {
      await broker?.stop();
    },
  };
  return mainThreadLatency(ctx, { payload: 'sized', open: true }, path);
}
