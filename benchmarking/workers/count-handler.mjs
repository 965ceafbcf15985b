// Worker-thread no-op handler for native-throughput: counts deliveries in shared memory and nothing else
// (it never touches event.data, so the lazy JSON parse in the worker is not paid).
let received;

export function setup(data) {
  received = new Int32Array(data.received);
}

export default function handler() {
  Atomics.add(received, 0, 1);
}
