/**
 * Graceful shutdown: a worker service that stops on SIGTERM (or Ctrl-C) without losing or repeating work.
 * `bus.close()` stops reading, lets the handlers already running finish, acks them, and leaves every event it
 * had not started pending in Redis for the next consumer of the group: run the example again and it finishes
 * the rest.
 *
 * Run: npm run example:graceful-shutdown     (Redis at REDIS_URL, default redis://localhost:6379)
 *      press Ctrl-C while it works, then run it again: the jobs left over are done first.
 * JOBS sets how many jobs a run publishes (default 200; 0 publishes none). EXAMPLE_PREFIX sets the key prefix
 * (default example-shutdown), so a second run finds the first run's work; remove its keys with
 * `redis-cli --scan --pattern 'example-shutdown:*' | xargs redis-cli del`.
 */
import { z } from 'zod';
import { createEventBus, defineEvents } from '../src/index.js';

const events = defineEvents({
  'job.submitted': z.object({ jobId: z.string(), ms: z.number().int().min(0) }),
});

const bus = await createEventBus({
  service: 'worker',
  events,
  transport: { type: 'redis-streams', url: process.env.REDIS_URL ?? 'redis://localhost:6379', prefix: process.env.EXAMPLE_PREFIX ?? 'example-shutdown', partitions: 2 },
});

// Each process is a new consumer of the group `workers`. Jobs a stopped consumer had read but not started are
// taken over by a live one once they have been idle `minIdleMs` (here 1 s; the default is 30 s).
await bus.subscribe('job.submitted', { group: 'workers', concurrency: 4, minIdleMs: 1000, blockMs: 500 }, async (event) => {
  await new Promise((resolve) => setTimeout(resolve, event.data.ms)); // the work
  console.log(`done ${event.data.jobId}`);
});

// Shutdown: once, whichever signal comes first. close() resolves when the running handlers have finished
// and their acks are sent (bounded by the bus's drainTimeoutMs).
let stopping = false;
async function shutdown(signal: string): Promise<void> {
  if (stopping) return;
  stopping = true;
  console.log(`${signal}: finishing the jobs in progress`);
  await bus.close();
  console.log('closed; the jobs not started stay queued for the next run');
}
process.once('SIGTERM', () => void shutdown('SIGTERM'));
process.once('SIGINT', () => void shutdown('SIGINT'));

const run = Date.now().toString(36);
const jobs = Array.from({ length: Number(process.env.JOBS ?? 200) }, (_, i) => ({ jobId: `${run}-${i}`, ms: 50 }));
if (jobs.length > 0) await bus.publishMany('job.submitted', jobs, { key: (j) => j.jobId });
console.log(`published ${jobs.length} jobs; working (Ctrl-C to stop)`);
