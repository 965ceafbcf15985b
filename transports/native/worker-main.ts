/**
 * Entry of a native-transport consumer thread. Loads the handler module first (nothing is popped before it
 * loads, so a module that fails to load loses nothing), then consumes its partitions until the stop flag
 * is raised, and hands back whatever it popped but did not deliver.
 */
import { parentPort, workerData, type MessagePort } from 'node:worker_threads';
import type { EventEnvelope } from '../../src/envelope.js';
import type { DeadLetter, DeliveryHandler } from '../../src/transport.js';
import { attachCore, type SharedCoreHandle } from '../../native/loader.js';
import { pinCurrentThread } from './affinity.js';
import type { ConsumerSettings, Pending } from './consumer.js';
import { WorkerConsumer } from './worker-consumer.js';
import { toPlainEnvelope } from './record-decode.js';
import { InFlightTable } from './in-flight.js';
import { handlerEvent } from '../../src/handler-module.js';
import { workerObserver, type WorkerFailure } from './worker-failure.js';

export interface WorkerInit {
  core: SharedCoreHandle;
  settings: ConsumerSettings;
  parts: number[];
  handler: string;
  userData: unknown;
  /** Int32Array flag: 1 = stop. */
  stop: SharedArrayBuffer;
  /** Int32Array cell: events this thread holds (read by the main thread if the thread dies). */
  held: SharedArrayBuffer;
  /** Int32Array: the events whose handlers run (WorkerLinks.handling, in-flight.ts). */
  inFlight: SharedArrayBuffer;
  /** The mark on the records this thread holds in the rings (WorkerLinks.holder). */
  holder: number;
  /** Int32Array, 2 per partition: the topic's consumer threads blocked waiting, then their waits (WorkerLinks.waitingCell). */
  waiting: SharedArrayBuffer;
  /** Int32Array [n, partitions...]: what this thread added to `waiting` (WorkerLinks.waitingMine). */
  mine: SharedArrayBuffer;
  waitUs: number;
  spinUs: number;
  drainMs: number;
  /** The CPU to pin this thread to (subscribe option `cpus`). */
  cpu: number | undefined;
  /** The application's `validateOnConsume` (SubscriptionSpec): check events against the schema the handler module carries. */
  validateOnConsume: boolean;
}

export type WorkerMessage =
  /** `pinned: false`: a CPU was asked for and the thread could not be pinned (no addon here, or not Linux). */
  | { t: 'ready'; pinned?: boolean; unchecked?: boolean }
  | { t: 'load-error'; message: string; field?: 'cpus' }
  | { t: 'dead'; dl: unknown }
  | { t: 'park'; item: Pending }
  | { t: 'unpark'; id: string }
  | { t: 'stopped'; left: Pending[] }
  | { t: 'fatal'; message: string }
  | WorkerFailure;

/** What a handler module may export. */
interface HandlerModule {
  default?: unknown;
  handler?: unknown;
  setup?: unknown;
}

// A real dynamic import in both builds (tsc's CommonJS output would turn import() into require()).
const importModule = new Function('specifier', 'return import(specifier)') as (specifier: string) => Promise<unknown>;

async function main(): Promise<void> {
  const init = workerData as WorkerInit;
  const port = parentPort!;
  let pinned: boolean | undefined;
  if (init.cpu !== undefined) {
    try {
      pinned = pinCurrentThread([init.cpu]);
    } catch (err) {
      port.postMessage({ t: 'load-error', message: (err as Error).message, field: 'cpus' } satisfies WorkerMessage);
      return;
    }
  }
  let handler: DeliveryHandler;
  try {
    handler = await loadHandler(init);
  } catch (err) {
    let message = err instanceof Error ? `${err.name}: ${err.message}` : String(err);
    if (/\.[cm]?ts$/.test(init.handler) && (err as { code?: string }).code === 'ERR_UNKNOWN_FILE_EXTENSION') {
      message += ' (a TypeScript handler module needs tsx installed beside eventlane, or a Node.js that strips types; or give the compiled .js)';
    }
    port.postMessage({ t: 'load-error', message } satisfies WorkerMessage);
    return;
  }
  const core = attachCore(init.core);
  const stopFlag = new Int32Array(init.stop);
  const onDead = (dl: DeadLetter): void => post(port, (clone) => ({ t: 'dead', dl: { ...dl, event: dl.event && clone(dl.event) } }));
  const observer = workerObserver((make) => post(port, make));
  const consumer = new WorkerConsumer(core, init.core.lane, { ...init.settings, observer }, handler, onDead, {
    // What the thread holds: under drop-oldest (records not held in the ring) what a dead thread lost; always,
    // for bus.idle() (the group's `unfinished`).
    heldCell: new Int32Array(init.held),
    handling: new InFlightTable(new Int32Array(init.inFlight)),
    holder: init.holder,
    waitingCell: new Int32Array(init.waiting),
    waitingMine: new Int32Array(init.mine),
    onPark: (item) => post(port, (clone) => ({ t: 'park', item: { ...item, env: clone(item.env) } })),
    onUnpark: (id) => port.postMessage({ t: 'unpark', id } satisfies WorkerMessage),
  });
  consumer.setPartitions(init.parts);
  port.on('message', (m: { t: string; parts?: number[]; items?: Pending[] }) => {
    if (m.t === 'assign') consumer.setPartitions(m.parts!);
    else if (m.t === 'give') consumer.give(m.items!);
  });
  port.postMessage({ t: 'ready', pinned, unchecked: init.validateOnConsume && handlerEvent(handler) === undefined && !checked.has(handler) } satisfies WorkerMessage);
  await consumer.run(() => Atomics.load(stopFlag, 0) === 1 || core.closed, init.waitUs, init.spinUs);
  const left = (await consumer.stop(init.drainMs)).map((p) => ({ ...p, env: toPlainEnvelope(p.env) }));
  core.release();
  port.postMessage({ t: 'stopped', left } satisfies WorkerMessage);
  port.close();
}

/** The handler of the module `init.handler` names (its `setup` awaited), checked where it carries its schema. */
async function loadHandler(init: WorkerInit): Promise<DeliveryHandler> {
  const ns = (await importModule(init.handler)) as HandlerModule;
  // A CommonJS module (TypeScript's `export default` compiled to CJS: `exports.default = fn`) is imported
  // as { default: module.exports }: its exports are one level down.
  const cjs = typeof ns.default === 'object' && ns.default !== null ? (ns.default as HandlerModule) : undefined;
  const fn = [ns.default, ns.handler, cjs?.default, cjs?.handler].find((f) => typeof f === 'function');
  if (typeof fn !== 'function') throw new TypeError(`module ${init.handler} exports no default (or "handler") function`);
  const setup = [ns.setup, cjs?.setup].find((f) => typeof f === 'function') as ((data: unknown) => unknown) | undefined;
  if (setup !== undefined) await setup(init.userData);
  return checkedHandler(fn as DeliveryHandler, init);
}

/** Handlers wrapped with the consumer-side check of the schema their module carries. */
const checked = new WeakSet<DeliveryHandler>();

/**
 * The handler of the module, with the consumer-side check (src/consume-check.ts: the schema check when
 * `validateOnConsume` is on, the upcasting of older versions always) when the module's handler carries its schema
 * (`defineHandler`); throws when it was defined for another event type.
 */
async function checkedHandler(fn: DeliveryHandler, init: WorkerInit): Promise<DeliveryHandler> {
  const marked = handlerEvent(fn);
  if (marked === undefined) return fn;
  if (marked.type !== init.settings.type) throw new TypeError(`module ${init.handler} handles "${marked.type}" (defineHandler), but it is subscribed to "${init.settings.type}"`);
  // Loaded here, not imported at the top: the checks need zod, which a thread whose handler carries no schema
  // does not load (the module that defined the schema has loaded it already).
  const { consumeCheck } = await import('../../src/consume-check.js');
  const check = consumeCheck(marked.events, marked.type, init.validateOnConsume);
  if (check === undefined) return fn; // nothing to check: a plain type with validateOnConsume off
  const wrapped: DeliveryHandler = (event, ctx) => {
    check(event);
    return fn(event, ctx);
  };
  checked.add(wrapped);
  return wrapped;
}

/**
 * Posts the message `make` builds with a plain copy of its event. A handler may have put what cannot be cloned
 * on `event.data` (a function, a promise) before it failed: the message then goes with the data as JSON
 * text read back (the event was read as JSON; what the handler added that JSON cannot hold is dropped).
 * Throwing here instead ended the thread's consumption while it lived on, holding its events.
 */
function post(port: MessagePort | NonNullable<typeof parentPort>, make: (clone: (e: EventEnvelope) => EventEnvelope) => WorkerMessage): void {
  try {
    port.postMessage(make(toPlainEnvelope));
  } catch (err) {
    if ((err as Error)?.name !== 'DataCloneError') throw err;
    port.postMessage(make((e) => ({ ...toPlainEnvelope(e), data: e.data === undefined ? undefined : JSON.parse(JSON.stringify(e.data)) })));
  }
}

main().catch((err: unknown) => {
  parentPort?.postMessage({ t: 'fatal', message: err instanceof Error ? (err.stack ?? err.message) : String(err) });
  // Ends this thread (not the process): its exit hands what it held back to the group and starts a new
  // thread in its place. Left alive, it held its events while consuming nothing.
  process.exit(1);
});
