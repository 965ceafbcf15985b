// No-op worker-thread handler for the native latency runs (latency-burst, latency-sustained): it only
// records when it started, in delivery order, into this worker's region of shared memory. It does not
// read the payload, except every 16th event's `id` (its position check). The main thread matches the
// k-th start time of a worker to the k-th event of the worker's partition: partitions are FIFO and
// events without a key go round-robin, so it knows the order (see OrderProbe in benchmarking/lib/start-probes.ts).
let times;
let counts;
let ids;
let base = 0;
let idBase = 0;
let at = 0;
let n = 0;
let epoch = 0;
let cap = 0;

export function setup(data) {
  const slot = Atomics.add(new Int32Array(data.slots), 0, 1);
  times = new Float64Array(data.times);
  counts = new Int32Array(data.counts);
  ids = new Int32Array(data.ids);
  base = slot * data.cap;
  idBase = slot * (data.cap >> 4);
  at = slot * 16; // one 64-byte line per worker's counter
  epoch = data.epoch;
  cap = data.cap;
}

export default function handler(event) {
  const now = process.hrtime.bigint();
  const k = n++;
  if (k < cap) {
    times[base + k] = Number(now) - epoch;
    if ((k & 15) === 0) ids[idBase + (k >> 4)] = event.data.id;
  }
  Atomics.store(counts, at, n);
}
