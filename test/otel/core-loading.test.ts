/**
 * `eventlane` alone never loads `@opentelemetry/api` (an optional peer dependency: only `eventlane/otel`
 * imports it), through `require` and through `import`, with a bus running. Child processes on the sources
 * (tsx); each check has its control: loading `eventlane/otel` does load the API there.
 */
import { execFileSync } from 'node:child_process';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = resolve(__dirname, '../..');
const entry = resolve(root, 'src/index.ts');
const otelEntry = resolve(root, 'src/otel/index.ts');

/** A bus's round trip on the memory transport, with `el` the loaded `eventlane`. */
const roundTrip = `
const { z } = require('zod');
const events = el.defineEvents({ 'order.created': z.object({ orderId: z.string() }) });
const bus = await el.createEventBus({ service: 's', events, transport: { type: 'memory' }, logger: false });
const got = [];
await bus.subscribe('order.created', { group: 'g' }, (e) => void got.push(e.data.orderId));
await bus.publish('order.created', { orderId: 'o-1' });
await bus.idle();
await bus.close();
if (got.join() !== 'o-1') throw new Error('no round trip');
`;

/** A module resolve hook that fails every `@opentelemetry/*` import (what an ES module graph loads goes through it). */
const BLOCK = `data:text/javascript,import{register}from"node:module";register(${JSON.stringify(
  'data:text/javascript,export async function resolve(s,c,n){if(s.startsWith("@opentelemetry/"))throw new Error("loaded "+s);return n(s,c)}',
)})`;

function node(args: string[]): string {
  return execFileSync(process.execPath, ['--import', 'tsx', ...args], { cwd: root, encoding: 'utf8', timeout: 60_000 }).trim();
}

describe('eventlane without @opentelemetry/api', () => {
  it('require: nothing of @opentelemetry is in require.cache after eventlane ran a bus; eventlane/otel puts it there', () => {
    const loaded = "Object.keys(require.cache).filter((k) => k.includes('/node_modules/@opentelemetry/')).length";
    const out = node([
      '-e',
      `(async () => { const el = require(${JSON.stringify(entry)}); ${roundTrip}
console.log(${loaded}); require(${JSON.stringify(otelEntry)}); console.log(${loaded} > 0); })();`,
    ]);
    expect(out.split('\n')).toEqual(['0', 'true']);
  });

  it('import: eventlane runs a bus with every @opentelemetry import failing; eventlane/otel does not load then', () => {
    const out = node([
      '--import',
      BLOCK,
      '--input-type=module',
      '-e',
      `import { createRequire } from 'node:module'; const require = createRequire(${JSON.stringify(entry)});
const el = await import(${JSON.stringify(entry)}); ${roundTrip}
console.log('eventlane ran');
console.log(await import(${JSON.stringify(otelEntry)}).then(() => 'eventlane/otel loaded', (e) => e.message));`,
    ]);
    expect(out.split('\n')).toEqual(['eventlane ran', 'loaded @opentelemetry/api']);
  });
});
