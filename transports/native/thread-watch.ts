/**
 * Listening to a consumer thread of a native group for its whole life: its messages (ready, load errors,
 * events it parks and unparks, dead letters, what it hands back as it stops), its errors and its exit,
 * each passed on to the group (`ThreadEvents`). `watchThread` settles once the thread is ready, or rejects
 * with a ConfigError when its handler module fails to load or the thread fails or exits before it is ready.
 */
import { ConfigError, describeError } from '../../src/errors.js';
import type { Logger } from '../../src/logger.js';
import type { DeadLetter } from '../../src/transport.js';
import type { Pending } from './consumer.js';
import type { ConsumerThread } from './members.js';
import type { WorkerMessage } from './worker-main.js';
import type { WorkerFailure } from './worker-failure.js';

/** What a group does with what its threads say. */
export interface ThreadEvents {
  readonly group: string;
  readonly logger: Logger;
  /** Events a thread gives back, for the group's other threads or members. */
  handBack(items: Pending[]): void;
  deadLetter(dl: DeadLetter): void;
  /** A handler of the thread failed (the message says what becomes of its event). */
  failed(thread: ConsumerThread, failure: WorkerFailure): void;
  /** The thread was given a CPU and cannot be pinned here. */
  unpinned(): void;
  /** The thread's handler module carries no schema while validateOnConsume is on (worker-main.ts). */
  unchecked(handlerModule: string): void;
  /** The thread exited, whatever way: `started` once it had been ready. */
  exited(thread: ConsumerThread, started: boolean): void;
}

export function watchThread(thread: ConsumerThread, handlerModule: string, on: ThreadEvents): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    let started = false;
    thread.worker.on('message', (m: WorkerMessage) => {
      if (m.t === 'ready') {
        started = true;
        if (m.pinned === false) on.unpinned();
        if (m.unchecked === true) on.unchecked(handlerModule);
        resolve();
      } else if (m.t === 'load-error') {
        // A replacement thread may have been handed events already (rebalance runs before it is ready).
        on.handBack([...thread.parked.values()]);
        thread.finish([]);
        reject(loadError(m, handlerModule));
      } else {
        onMessage(thread, m, on);
      }
    });
    thread.worker.on('error', (err) => {
      on.logger.error({ group: on.group, err: describeError(err) }, 'native consumer thread crashed');
      if (!started) reject(new ConfigError(`Handler module ${handlerModule} failed in a worker: ${describeError(err)}`, [{ path: ['handler'], message: describeError(err) }]));
    });
    thread.worker.on('exit', () => {
      if (!started) reject(new ConfigError(`Consumer thread for ${handlerModule} exited before it was ready.`, [{ path: ['handler'], message: 'worker exited' }]));
      on.exited(thread, started);
    });
  });
}

/** The messages of a thread after it is ready (or while it loads) that do not settle its start. */
function onMessage(thread: ConsumerThread, m: WorkerMessage, on: ThreadEvents): void {
  if (m.t === 'park') {
    thread.parked.set(m.item.env.id, m.item);
  } else if (m.t === 'unpark') {
    thread.parked.delete(m.id);
  } else if (m.t === 'dead') {
    on.deadLetter(m.dl as DeadLetter);
  } else if (m.t === 'failed') {
    on.failed(thread, m);
  } else if (m.t === 'stopped') {
    // Still parked: events it was handed and never took (a 'give' it had not read when it stopped).
    // They go back with what it handed back (messages arrive in order: finished ones were unparked).
    const left = m.left;
    if (thread.parked.size > 0) {
      const back = new Set(left.map((p) => p.env.id));
      for (const it of thread.parked.values()) if (!back.has(it.env.id)) left.push(it);
    }
    thread.finish(left);
  } else if (m.t === 'fatal') {
    on.logger.error({ group: on.group, err: m.message }, 'native consumer thread failed');
  }
}

function loadError(m: { message: string; field?: 'cpus' }, handlerModule: string): ConfigError {
  if (m.field === 'cpus') return new ConfigError(`subscribe options: cpus: ${m.message}`, [{ path: ['cpus'], message: m.message }]);
  return new ConfigError(`Handler module ${handlerModule} failed to load in a worker: ${m.message}${bareHint(handlerModule)}`, [{ path: ['handler'], message: m.message }]);
}

/**
 * A handler given as neither a URL nor an absolute path is a bare specifier: the worker imports it as a
 * package, from eventlane's own folder, so a file name next to the caller ('handler.mjs') is not found.
 */
function bareHint(handlerModule: string): string {
  if (/^[a-z][a-z0-9+.-]*:/i.test(handlerModule)) return '';
  return ` ("${handlerModule}" is neither a URL nor an absolute path, so it was imported as a package name; for a file, pass new URL('./${handlerModule}', import.meta.url) or an absolute path)`;
}
