/**
 * Handler module of examples/native-workers.ts, run in each worker thread. `setup` gets the subscription's
 * `workerData` (structured-cloned: a SharedArrayBuffer stays shared); the default export handles one event.
 * `defineHandler` types the event from its schema, and lets the worker thread check each event against the
 * schema before the handler runs (`validateOnConsume`).
 */
import { defineHandler } from '../src/index.js';
import { events } from './trade-events.js';

let totals: Int32Array;

export function setup(data: { totals: SharedArrayBuffer }): void {
  totals = new Int32Array(data.totals);
}

export default defineHandler(events, 'trade.executed', (event) => {
  // [0] = trades handled, [1] = shares traded
  Atomics.add(totals, 0, 1);
  Atomics.add(totals, 1, event.data.qty);
});
