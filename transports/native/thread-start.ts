/**
 * Starting the consumer threads of a native group: the shared cells a thread and the group both see (its
 * stop flag, held count, in-flight table and waiting marks), its settings, and the thread itself
 * (`spawnConsumerThread`). What `new Worker()` refuses is turned into the subscribe's error here
 * (`startFailure`). Listening to the thread once started is thread-watch.ts's.
 */
import { ConfigError } from '../../src/errors.js';
import type { SubscriptionSpec } from '../../src/transport.js';
import type { PartitionCore } from '../../native/js/core-api.js';
import type { ConsumerSettings } from './consumer.js';
import { inFlightBytes } from './in-flight.js';
import { ConsumerThread } from './members.js';
import { spawnConsumerThread } from './spawn.js';
import type { WorkerInit } from './worker-main.js';

/** Longest a worker waits inside the core before looking at its stop flag and messages. */
const WORKER_WAIT_US = 20_000;

/** What a thread of the group is started with, besides its subscription. */
export interface ThreadLaunch {
  readonly core: PartitionCore;
  readonly lane: number;
  readonly partitions: number;
  /** The topic's waiting cells (GroupOptions.waiting). */
  readonly waiting: Int32Array;
  readonly spinUs: number;
}

/** Starts a thread running `handlerModule` for `spec`, marking what it holds in the rings with `holder`. */
export function startConsumerThread(
  l: ThreadLaunch,
  settings: ConsumerSettings,
  spec: SubscriptionSpec,
  handlerModule: string,
  userData: unknown,
  cpu: number | undefined,
  holder: number,
): ConsumerThread {
  const stop = new SharedArrayBuffer(4);
  const held = new SharedArrayBuffer(4);
  const inFlight = new SharedArrayBuffer(inFlightBytes(spec.concurrency));
  const mine = new SharedArrayBuffer(4 * (1 + l.partitions));
  const init: WorkerInit = {
    core: l.core.share(l.lane),
    settings,
    parts: [],
    handler: handlerModule,
    userData,
    stop,
    held,
    inFlight,
    waiting: l.waiting.buffer as SharedArrayBuffer,
    mine,
    holder,
    waitUs: WORKER_WAIT_US,
    spinUs: l.spinUs,
    drainMs: spec.drainTimeoutMs,
    cpu,
    validateOnConsume: spec.validateOnConsume,
  };
  return new ConsumerThread(spawnConsumerThread(init, handlerModule), new Int32Array(stop), new Int32Array(held), new Int32Array(inFlight), new Int32Array(mine), holder);
}

/** The holder mark after `holder` (0 is no thread's). */
export function nextHolder(holder: number): number {
  return holder === 0xffffffff ? 1 : holder + 1;
}

/**
 * The subscribe's error for a thread `new Worker()` refused: workerData that cannot be cloned (a function,
 * a class with private state, a MessagePort, which would need a transfer list) is a ConfigError naming it;
 * anything else (no more threads) is `err` itself.
 */
export function startFailure(err: unknown): unknown {
  const code = (err as { code?: string }).code;
  if ((err as Error).name === 'DataCloneError' || code === 'ERR_MISSING_TRANSFERABLE_IN_TRANSFER_LIST') {
    const message = `cannot be passed to a worker thread (structured clone): ${(err as Error).message}`;
    return new ConfigError(`subscribe options: workerData ${message}`, [{ path: ['workerData'], message }], { cause: err });
  }
  return err;
}
