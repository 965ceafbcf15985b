/**
 * BullMQ peer rows, driven the fastest way BullMQ's documentation gives: `Queue.addBulk` of BULK jobs per
 * call (PEER_CONCURRENCY calls in flight) where many events are published, `Queue.add` per event where each
 * is sent on its own (end-to-end), and one `Worker` with `concurrency: PEER_CONCURRENCY`. Jobs are removed
 * once completed (`removeOnComplete: true`, BullMQ's production advice). Every key is under the iteration's
 * key prefix (BullMQ's `prefix` option), so the runner deletes them with the iteration's own keys.
 * The package is imported when a row runs: without it installed the scenarios still load.
 */
import type { ConnectionOptions, Job, Queue, Worker } from 'bullmq';
import { mainThreadLatency, type LatencyPath } from '../lib/latency-run.js';
import { DeliveryTracker, sizedPayloads, type SizedPayload } from '../lib/payload.js';
import type { Measured, RunContext } from '../lib/types.js';
import { BULK, inFlight, PEER_CONCURRENCY, withNotes } from './shared.js';

const QUEUE = 'bench';
const JOB = 'bench.sized';

interface Options {
  connection: ConnectionOptions;
  prefix: string;
}

/** BullMQ's connection (workers need `maxRetriesPerRequest: null`) and the iteration's key prefix. */
function options(ctx: RunContext): Options {
  return { connection: { url: ctx.config.redisUrl, maxRetriesPerRequest: null }, prefix: `${ctx.config.keyPrefix}bull` };
}

async function openQueue(ctx: RunContext): Promise<Queue<SizedPayload>> {
  const { Queue } = await import('bullmq');
  const queue = new Queue<SizedPayload>(QUEUE, { ...options(ctx), defaultJobOptions: { removeOnComplete: true } });
  queue.on('error', () => {}); // a lost connection fails the calls that need it
  await queue.waitUntilReady();
  return queue;
}

/** A Worker running `handle` for each job, PEER_CONCURRENCY at once; errors it reports outside jobs go to `errors`. */
async function startWorker(ctx: RunContext, handle: (job: Job<SizedPayload>) => void, errors: string[]): Promise<Worker<SizedPayload>> {
  const { Worker } = await import('bullmq');
  const worker = new Worker<SizedPayload>(
    QUEUE,
    async (job) => {
      handle(job);
    },
    { ...options(ctx), concurrency: PEER_CONCURRENCY },
  );
  worker.on('error', (err) => errors.push(`Worker error: ${err.message}`));
  worker.on('failed', (_job, err) => errors.push(`job failed: ${err.message}`));
  return worker;
}

/** `payloads` as jobs in addBulk calls of BULK, PEER_CONCURRENCY calls in flight. */
function addAll(queue: Queue<SizedPayload>, jobs: { name: string; data: SizedPayload }[]): Promise<void> {
  return inFlight(Math.ceil(jobs.length / BULK), PEER_CONCURRENCY, (k) => queue.addBulk(jobs.slice(k * BULK, (k + 1) * BULK)));
}

const asJobs = (payloads: SizedPayload[]) => payloads.map((data) => ({ name: JOB, data }));

/** Payload ids of the jobs waiting in the queue, read back a page at a time. */
async function waitingIds(queue: Queue<SizedPayload>, n: number): Promise<DeliveryTracker> {
  const tracker = new DeliveryTracker(n);
  for (let start = 0; ; start += BULK) {
    const page = await queue.getJobs(['wait'], start, start + BULK - 1, true);
    for (const job of page) tracker.mark((job.data as SizedPayload).id);
    if (page.length < BULK) return tracker;
  }
}

/** Publishing: jobs built before the window, addBulk timed, then every waiting job read back. */
export async function bullmqPublish(ctx: RunContext): Promise<Measured> {
  const { messageCount: n, messageSize: size } = ctx.config;
  const jobs = asJobs(sizedPayloads(n, size));
  const queue = await openQueue(ctx);
  try {
    await ctx.timed(() => addAll(queue, jobs));
    const how = `Queue.addBulk of ${BULK} jobs, ${PEER_CONCURRENCY} calls in flight`;
    if (ctx.warmup) return { events: n, sent: n, received: null, bytes: n * size, verifiedBy: `${how}; warmup, not read back` };
    const t = await waitingIds(queue, n);
    return { events: n, sent: n, received: t.received, unique: t.unique, bytes: n * size, verifiedBy: `${how}; waiting jobs read back with Queue.getJobs` };
  } finally {
    await queue.close();
  }
}

/** Consuming: the queue prefilled (untimed), then a Worker started and timed until it ran every job. */
export async function bullmqConsume(ctx: RunContext): Promise<Measured> {
  const { messageCount: n, messageSize: size } = ctx.config;
  const payloads = sizedPayloads(n, size);
  const queue = await openQueue(ctx);
  const tracker = new DeliveryTracker(n);
  const errors: string[] = [];
  let worker: Worker<SizedPayload> | undefined;
  try {
    await addAll(queue, asJobs(payloads));
    await ctx.timed(async () => {
      worker = await startWorker(ctx, (job) => tracker.mark(job.data.id), errors);
      await tracker.waitAll(10_000);
    });
    return withNotes(tracker.measured(n, { bytes: tracker.unique * size, verifiedBy: 'payload ids counted in the Worker processor' }), errors.slice(0, 5));
  } finally {
    await worker?.close();
    await queue.close();
  }
}

/** End-to-end latency: Queue.add per event -> the Worker's processor, paced as the library's row. */
export async function bullmqEndToEnd(ctx: RunContext): Promise<Measured> {
  let queue: Queue<SizedPayload> | undefined;
  let worker: Worker<SizedPayload> | undefined;
  const errors: string[] = [];
  const path: LatencyPath = {
    sends: 'Queue.add',
    async subscribe(deliver) {
      queue = await openQueue(ctx);
      worker = await startWorker(ctx, (job) => deliver(job.data.id), errors);
      await worker.waitUntilReady();
    },
    send: (payload) => queue!.add(JOB, payload as SizedPayload),
    notes: () => errors.slice(0, 5),
    async close() {
      await worker?.close();
      await queue?.close();
    },
  };
  return mainThreadLatency(ctx, { payload: 'sized', open: true }, path);
}
