// node --expose-gc scripts/bus-churn.mjs [bench-build dir, default .bench-build] [transport, default memory] [rounds, default 8]
// (build first: node scripts/build-bench.mjs). A/B: copy .bench-build, patch the copy, run both in turn.
// A new bus per round, closed and followed by a full GC; prints each round's publish rate (M events/s).
import { z } from 'zod';
import { pathToFileURL } from 'node:url';
import { resolve } from 'node:path';
const [dir = '.bench-build', type = 'memory', roundsArg = '8'] = process.argv.slice(2);
const { createEventBus, defineEvents } = await import(pathToFileURL(resolve(dir, 'src/index.js')).href);
const events = defineEvents({ trade: z.object({ id: z.number(), sym: z.string(), px: z.number(), qty: z.number() }) });
const payloads = Array.from({ length: 200_000 }, (_, i) => ({ id: i, sym: 'AAPL', px: 150.25, qty: 100 }));
const out = [];
for (let r = 0; r < Number(roundsArg); r++) {
  const bus = await createEventBus({ service: 'churn', events, transport: { type, partitions: 1 } });
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < payloads.length; i += 1000) await bus.publishMany('trade', payloads.slice(i, i + 1000));
  for (let i = 0; i < 20_000; i++) await bus.publish('trade', payloads[i]);
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  out.push((220_000 / ms / 1000).toFixed(2));
  await bus.close();
  globalThis.gc();
}
console.log(dir, type, out.join(' '));
