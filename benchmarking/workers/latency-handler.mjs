// Worker-thread handler for latency-burst / latency-sustained on the native transport. The first thing
// it does is read the shared monotonic clock (process.hrtime, CLOCK_MONOTONIC in every thread); the
// payload's `t` is the event's send time on the same clock, in nanoseconds after `epoch`. The delta is
// written into a shared Float64Array slot indexed by payload id; the main thread builds the histogram.
let latNs;
let received;
let unique;
let seen;
let epoch = 0;

export function setup(data) {
  latNs = new Float64Array(data.latNs);
  received = new Int32Array(data.received);
  unique = new Int32Array(data.unique);
  seen = new Int32Array(data.seen);
  epoch = data.epoch;
}

export default function handler(event) {
  const now = process.hrtime.bigint();
  const d = event.data;
  const id = d.id;
  latNs[id] = Number(now) - epoch - d.t;
  if (Atomics.compareExchange(seen, id, 0, 1) === 0) Atomics.add(unique, 0, 1);
  Atomics.add(received, 0, 1);
}
