/**
 * The native transport with worker-thread consumers: trades partitioned by symbol (per-key order), handled in
 * worker threads (one per CPU left after the publishing thread's, at most two), each pinned to its own CPU
 * and the publishing thread to another (with the addon, on Linux); a synchronous tryPublish; a handler
 * module that fails to load rejecting with ConfigError.
 * Run: npx tsx examples/native-workers.ts
 */
import { ConfigError, createEventBus } from '../src/index.js';
import { currentThreadCpus, pinCurrentThread, type NativeTransport } from '../transports/native/index.js';
import { events } from './trade-events.js';

const bus = await createEventBus({
  service: 'pricing',
  events,
  transport: { type: 'native', partitions: 4, capacity: 16384, backpressure: 'block' },
});
console.log(`native core: ${(bus.transport as NativeTransport).implementation}`);

// This thread on the first CPU, each worker on one of the others (docs/native-workers.md).
const cpus = currentThreadCpus() ?? [];
const workers = Math.max(1, Math.min(2, cpus.length - 1));
const pinned = cpus.length > workers && pinCurrentThread([cpus[0]!]);
const totals = new Int32Array(new SharedArrayBuffer(8));
const sub = await bus.subscribe('trade.executed', {
  group: 'positions',
  workers,
  handler: new URL('./native-workers-handler.ts', import.meta.url),
  workerData: { totals: totals.buffer },
  ...(pinned ? { cpus: cpus.slice(1, 1 + workers) } : {}),
});
console.log(pinned ? `publisher on CPU ${cpus[0]}, ${workers} worker(s) on CPU(s) ${cpus.slice(1, 1 + workers).join(',')}` : `${workers} worker(s), threads not pinned (one CPU, or no addon)`);

const syms = ['AAPL', 'MSFT', 'NVDA', 'AMZN', 'GOOG'];
const trades = Array.from({ length: 100_000 }, (_, i) => ({ id: i, sym: syms[i % syms.length]!, px: 150.25, qty: 100 }));
// One validation pass, then batches into the rings; the key keeps each symbol's trades in order.
await bus.publishMany('trade.executed', trades, { key: (t) => t.sym });
// Synchronous: true when every group's ring had room (false: nothing sent, try later).
const took = bus.tryPublish('trade.executed', { id: 100_000, sym: 'AAPL', px: 151, qty: 5 }, { key: 'AAPL' });
if (!took) console.log('the rings were full: tryPublish sent nothing');

// The worker group has finished every trade published (close() alone would drop what is still in the rings).
await bus.idle({ timeoutMs: 30_000 });
console.log(`workers handled ${Atomics.load(totals, 0)} trades, ${Atomics.load(totals, 1)} shares`);

try {
  await bus.subscribe('trade.executed', { group: 'broken', workers: 1, handler: new URL('./no-such-module.js', import.meta.url) });
} catch (err) {
  if (err instanceof ConfigError) console.log(`a handler module that cannot load: ConfigError naming ${err.issues[0]?.path.join('.')}`);
}

await sub.close();
await bus.close();
if (pinned) pinCurrentThread(cpus);
console.log('bus closed cleanly');
