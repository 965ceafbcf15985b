// Worker-thread handler for partition-scaling on the native transport: ~workMs of CPU busy loop per
// event, then counts the delivery in shared memory (received, and distinct ids for loss/duplicates).
let received;
let seen;
let unique;
let workMs = 1;

export function setup(data) {
  received = new Int32Array(data.received);
  unique = new Int32Array(data.unique);
  seen = new Int32Array(data.seen);
  workMs = data.workMs;
}

export default function handler(event) {
  const end = performance.now() + workMs;
  while (performance.now() < end);
  Atomics.add(received, 0, 1);
  const id = event.data.id;
  if (Atomics.compareExchange(seen, id, 0, 1) === 0) Atomics.add(unique, 0, 1);
}
