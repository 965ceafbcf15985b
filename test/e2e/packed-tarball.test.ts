/**
 * Packs the package as npm would publish it, installs the tarball into a fresh directory, and uses it
 * through both `import` and `require`.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const root = resolve(__dirname, '../..');
let dir: string;

const program = (load: string, transport = "{ type: 'memory' }") => `
${load}
const { z } = zod;
const events = el.defineEvents({ 'order.created': z.object({ orderId: z.string() }) });
(async () => {
  const bus = await el.createEventBus({ service: 'e2e', events, transport: ${transport} });
  const got = [];
  await bus.subscribe('order.created', { group: 'g' }, (e) => { got.push(e.data.orderId); });
  await bus.publish('order.created', { orderId: 'o-1' });
  const bad = await bus.publish('order.created', { orderId: 1 }).catch((e) => e.code);
  await new Promise((r) => setTimeout(r, 50));
  await bus.close();
  console.log(JSON.stringify({ got, bad, isError: new el.ValidationError('x', []) instanceof el.EventlaneError }));
})();
`;

describe('packed tarball', () => {
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'eventlane-e2e-'));
    // --ignore-scripts: `npm test` built dist/ already; prepack would delete and rebuild it while other test files run.
    const out = execFileSync('npm', ['pack', '--ignore-scripts', '--pack-destination', dir, '--json'], { cwd: root, encoding: 'utf8' });
    const [{ filename }] = JSON.parse(out.slice(out.indexOf('[')));
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'consumer', version: '1.0.0', private: true }));
    // @opentelemetry/api: the optional peer of eventlane/otel.
    execFileSync('npm', ['install', '--no-audit', '--no-fund', join(dir, filename), 'zod@4', '@opentelemetry/api@~1.9.0'], { cwd: dir, stdio: 'pipe' });
  }, 180_000);

  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('works through import', () => {
    writeFileSync(join(dir, 'esm.mjs'), program(`import * as el from 'eventlane'; import * as zod from 'zod';`));
    const out = execFileSync(process.execPath, ['esm.mjs'], { cwd: dir, encoding: 'utf8' });
    expect(JSON.parse(out)).toEqual({ got: ['o-1'], bad: 'ERR_VALIDATION', isError: true });
  });

  it('works through require', () => {
    writeFileSync(join(dir, 'cjs.cjs'), program(`const el = require('eventlane'); const zod = require('zod');`));
    const out = execFileSync(process.execPath, ['cjs.cjs'], { cwd: dir, encoding: 'utf8' });
    expect(JSON.parse(out)).toEqual({ got: ['o-1'], bad: 'ERR_VALIDATION', isError: true });
  });

  it('loads the shipped prebuilt native addon (no build step in the consumer)', () => {
    const native = "{ type: 'native', implementation: 'native', partitions: 2 }";
    writeFileSync(join(dir, 'native.mjs'), program(`import * as el from 'eventlane'; import * as zod from 'zod';`, native));
    writeFileSync(join(dir, 'native.cjs'), program(`const el = require('eventlane'); const zod = require('zod');`, native));
    for (const file of ['native.mjs', 'native.cjs']) {
      const out = execFileSync(process.execPath, [file], { cwd: dir, encoding: 'utf8' });
      expect(JSON.parse(out)).toEqual({ got: ['o-1'], bad: 'ERR_VALIDATION', isError: true });
    }
  });

  it('runs a worker handler module of a CommonJS project (absolute path, export default), as the README says', () => {
    // What tsc emits for `export default (event) => ...` / `export function setup(...)` in a CommonJS project.
    writeFileSync(
      join(dir, 'worker-handler.cjs'),
      `"use strict";\nObject.defineProperty(exports, "__esModule", { value: true });\nlet seen;\nexports.setup = (data) => { seen = new Int32Array(data.seen); };\nexports.default = (event) => { Atomics.add(seen, 0, event.data.orderId.length); };\n`,
    );
    writeFileSync(
      join(dir, 'workers.cjs'),
      `const el = require('eventlane'); const { z } = require('zod'); const { join } = require('node:path');
(async () => {
  const events = el.defineEvents({ 'order.created': z.object({ orderId: z.string() }) });
  const bus = await el.createEventBus({ service: 'e2e', events, transport: { type: 'native' } });
  const seen = new Int32Array(new SharedArrayBuffer(4));
  await bus.subscribe('order.created', { group: 'w', workers: 1, handler: join(__dirname, 'worker-handler.cjs'), workerData: { seen: seen.buffer } });
  await bus.publish('order.created', { orderId: 'o-123' });
  const deadline = Date.now() + 10000;
  while (Atomics.load(seen, 0) < 5 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
  await bus.close();
  console.log(Atomics.load(seen, 0));
})();
`,
    );
    const out = execFileSync(process.execPath, ['workers.cjs'], { cwd: dir, encoding: 'utf8', timeout: 30_000 });
    expect(out.trim()).toBe('5');
  });

  /** Whether this Node strips TypeScript types itself (22.18 and later): it then loads a `.ts` handler module without tsx. */
  const stripsTypes = (process.features as { typescript?: string }).typescript !== undefined;

  it('a TypeScript worker handler module without tsx installed runs where Node strips types, else is a ConfigError naming handler and saying what would load it', () => {
    writeFileSync(join(dir, 'ts-handler.ts'), 'export default (event: unknown): void => {};\n');
    writeFileSync(
      join(dir, 'ts-workers.cjs'),
      `const el = require('eventlane'); const { z } = require('zod'); const { join } = require('node:path');
(async () => {
  const events = el.defineEvents({ 'order.created': z.object({ orderId: z.string() }) });
  const bus = await el.createEventBus({ service: 'e2e', events, transport: { type: 'native' } });
  const sub = await bus.subscribe('order.created', { group: 'w', workers: 1, handler: join(__dirname, 'ts-handler.ts') }).catch((e) => e);
  if (sub instanceof Error) {
    await bus.close();
    console.log(JSON.stringify({ name: sub.name, path: sub.issues && sub.issues[0].path, message: sub.message }));
    return;
  }
  await bus.publish('order.created', { orderId: 'o-1' });
  await bus.idle({ timeoutMs: 10000 });
  await bus.close();
  console.log(JSON.stringify({ name: 'subscribed', handled: true }));
})();
`,
    );
    const out = JSON.parse(execFileSync(process.execPath, ['ts-workers.cjs'], { cwd: dir, encoding: 'utf8', timeout: 30_000 }).trim()) as { name: string; path: string[]; message: string };
    if (stripsTypes) {
      expect(out).toEqual({ name: 'subscribed', handled: true });
      return;
    }
    expect(out.name).toBe('ConfigError');
    expect(out.path).toEqual(['handler']);
    expect(out.message).toMatch(/needs tsx installed beside eventlane/);
  });

  it('exposes the transports as subpath exports (ops API, transport classes)', () => {
    const cjs = execFileSync(
      process.execPath,
      ['-e', "const r = require('eventlane/redis-streams'); const n = require('eventlane/native'); console.log(typeof r.openRedisStreamsAdmin, typeof n.NativeTransport)"],
      { cwd: dir, encoding: 'utf8' },
    );
    expect(cjs.trim()).toBe('function function');
    const esm = execFileSync(process.execPath, ['--input-type=module', '-e', "const r = await import('eventlane/redis-streams'); console.log(typeof r.openRedisStreamsAdmin)"], {
      cwd: dir,
      encoding: 'utf8',
    });
    expect(esm.trim()).toBe('function');
  });

  it("splits the surface: 'eventlane' for applications, 'eventlane/transport' for transport authors", () => {
    const probe =
      'console.log(typeof t.registerTransport, typeof t.DeliveryEngine, typeof t.jsonCodec, typeof t.ConnectionError, typeof root.DeliveryEngine, typeof root.NO_ROOM, typeof root.jsonCodec, typeof root.createEventBus)';
    const cjs = execFileSync(process.execPath, ['-e', `const t = require('eventlane/transport'); const root = require('eventlane'); ${probe}`], { cwd: dir, encoding: 'utf8' });
    const esm = execFileSync(process.execPath, ['--input-type=module', '-e', `const t = await import('eventlane/transport'); const root = await import('eventlane'); ${probe}`], {
      cwd: dir,
      encoding: 'utf8',
    });
    for (const out of [cjs, esm]) expect(out.trim()).toBe('function function object function undefined undefined undefined function');
  });

  it("exposes 'eventlane/prometheus' through import and require once prom-client is installed; 'eventlane' alone never loads prom-client", () => {
    // With prom-client not installed yet, the root loads without it.
    const rootOnly = execFileSync(process.execPath, ['-e', "require('eventlane'); console.log(Object.keys(require.cache).some((f) => f.includes('prom-client')))"], { cwd: dir, encoding: 'utf8' });
    expect(rootOnly.trim()).toBe('false');
    execFileSync('npm', ['install', '--no-audit', '--no-fund', 'prom-client@15'], { cwd: dir, stdio: 'pipe' });
    const probe = `const registry = new prom.Registry();
const m = p.eventlaneMetrics({ registry });
const names = registry.getMetricsAsArray().map((x) => x.name).filter((n) => n.startsWith('eventlane_')).length;
m.close();
console.log(typeof p.eventlaneMetrics, names, registry.getMetricsAsArray().length);`;
    const cjs = execFileSync(process.execPath, ['-e', `const p = require('eventlane/prometheus'); const prom = require('prom-client');\n${probe}`], { cwd: dir, encoding: 'utf8' });
    const esm = execFileSync(process.execPath, ['--input-type=module', '-e', `import * as p from 'eventlane/prometheus'; import * as prom from 'prom-client';\n${probe}`], {
      cwd: dir,
      encoding: 'utf8',
    });
    for (const out of [cjs, esm]) expect(out.trim()).toBe('function 10 0');
    // With prom-client installed, the root still does not load it.
    const root = execFileSync(process.execPath, ['-e', "require('eventlane'); console.log(Object.keys(require.cache).some((f) => f.includes('prom-client')))"], { cwd: dir, encoding: 'utf8' });
    expect(root.trim()).toBe('false');
    const program = `import { Registry } from 'prom-client';
import { eventlaneMetrics, type EventlaneMetrics } from 'eventlane/prometheus';
export const metrics: EventlaneMetrics = eventlaneMetrics({ registry: new Registry() });
`;
    expect(tsc('ts-prometheus-esm', { module: 'NodeNext', moduleResolution: 'NodeNext' }, { 'main.mts': program })).toBe('');
    expect(tsc('ts-prometheus-cjs', { module: 'CommonJS', moduleResolution: 'node10', esModuleInterop: true }, { 'main.ts': program })).toBe('');
  }, 180_000);

  it('installs the eventlane-redis operations CLI as an executable', () => {
    const help = execFileSync(join(dir, 'node_modules/.bin/eventlane-redis'), ['--help'], { cwd: dir, encoding: 'utf8' });
    expect(help).toContain('Usage: eventlane-redis <command>');
  });

  // The consumer's TypeScript compiles against the installed package (skipLibCheck off: our .d.ts files too).
  const tsc = (project: string, compilerOptions: Record<string, unknown>, files: Record<string, string>): string => {
    const at = join(dir, project);
    mkdirSync(at, { recursive: true });
    for (const [name, text] of Object.entries(files)) writeFileSync(join(at, name), text);
    const options = { strict: true, noEmit: true, skipLibCheck: false, target: 'ES2022', typeRoots: [join(root, 'node_modules/@types')], types: ['node'], ...compilerOptions };
    writeFileSync(join(at, 'tsconfig.json'), JSON.stringify({ compilerOptions: options, files: Object.keys(files) }));
    try {
      return execFileSync(process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), '-p', at], { encoding: 'utf8' });
    } catch (err) {
      return (err as { stdout: string }).stdout;
    }
  };

  it("exposes 'eventlane/conformance' through import and require, with no test runner installed: it declares the suite and a declared test runs", () => {
    // A stand-in runner: collects the tests and hooks, then runs the first test between the hooks.
    const probe = `const tests = []; const hooks = {};
const expect = (actual) => ({ toBe: (want) => { if (actual !== want) throw new Error(actual + ' !== ' + want); } });
const api = { describe: (_name, body) => body(), it: (name, body) => tests.push({ name, body }), beforeAll: (fn) => (hooks.before = fn), afterEach: (fn) => (hooks.after = fn), afterAll: () => {}, expect };
c.describeConformance(api, { name: 'memory', transport: () => ({ type: 'memory', name: c.uniqueName('packed'), partitions: 4 }) });
(async () => {
  await hooks.before();
  await tests[0].body();
  await hooks.after();
  console.log(tests.length, tests[0].name, c.conformanceEvents.names.join());
})();`;
    const cjs = execFileSync(process.execPath, ['-e', `const c = require('eventlane/conformance');\n${probe}`], { cwd: dir, encoding: 'utf8', timeout: 30_000 });
    const esm = execFileSync(process.execPath, ['--input-type=module', '-e', `const c = await import('eventlane/conformance');\n${probe}`], { cwd: dir, encoding: 'utf8', timeout: 30_000 });
    for (const out of [cjs, esm]) expect(out.trim()).toBe('32 delivers every published event at least once order.created,order.cancelled');
    const program = `import { describeConformance, uniqueName, type ConformanceTestApi } from 'eventlane/conformance';
declare const api: ConformanceTestApi;
describeConformance(api, { name: 'memory', transport: () => ({ type: 'memory', name: uniqueName('m') }), timeoutMs: 5_000 });
`;
    expect(tsc('ts-conformance-esm', { module: 'NodeNext', moduleResolution: 'NodeNext' }, { 'main.mts': program })).toBe('');
    expect(tsc('ts-conformance-cjs', { module: 'CommonJS', moduleResolution: 'node10', esModuleInterop: true }, { 'main.ts': program })).toBe('');
  }, 120_000);

  it("exposes 'eventlane/otel' through import and require, named with the package's version, and a bus runs instrumented with the API alone", () => {
    const { version } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string };
    const probe = `const otel = o.instrumentEventlane();
const events = el.defineEvents({ 'order.created': zod.z.object({ orderId: zod.z.string() }) });
(async () => {
  const bus = await el.createEventBus({ service: 'e2e', events, transport: { type: 'memory' } });
  const got = [];
  await bus.subscribe('order.created', { group: 'g' }, (e) => { got.push(e.data.orderId); });
  await bus.publish('order.created', { orderId: 'o-1' });
  await bus.idle();
  await bus.close();
  otel.disable();
  console.log(typeof o.EventlaneInstrumentation, otel.instrumentationName, otel.instrumentationVersion, got.join());
})();`;
    writeFileSync(join(dir, 'otel.cjs'), `const el = require('eventlane'); const o = require('eventlane/otel'); const zod = require('zod');\n${probe}`);
    writeFileSync(join(dir, 'otel.mjs'), `import * as el from 'eventlane'; import * as o from 'eventlane/otel'; import * as zod from 'zod';\n${probe}`);
    for (const file of ['otel.cjs', 'otel.mjs']) {
      expect(execFileSync(process.execPath, [file], { cwd: dir, encoding: 'utf8', timeout: 30_000 }).trim(), file).toBe(`function eventlane ${version} o-1`);
    }
    const program = `import { EventlaneInstrumentation, instrumentEventlane, type EventlaneInstrumentationConfig } from 'eventlane/otel';
const config: EventlaneInstrumentationConfig = { processSpanParent: 'child', processHook: (span, info) => void span.setAttribute('app.group', info.context.group) };
export const otel: EventlaneInstrumentation = instrumentEventlane(config);
// @ts-expect-error processSpanParent is 'link' or 'child'
instrumentEventlane({ processSpanParent: 'parent' });
`;
    expect(tsc('ts-otel-esm', { module: 'NodeNext', moduleResolution: 'NodeNext' }, { 'main.mts': program })).toBe('');
    expect(tsc('ts-otel-cjs', { module: 'CommonJS', moduleResolution: 'node10', esModuleInterop: true }, { 'main.ts': program })).toBe('');
  }, 120_000);

  it("compiles the README's runnable blocks as written (tsc --strict, ESM, module NodeNext)", () => {
    const readme = readFileSync(join(root, 'README.md'), 'utf8');
    const blocks = [...readme.matchAll(/^```ts runnable=\S+\n([\s\S]*?)^```$/gm)].map((m) => m[1]!);
    expect(blocks.length).toBeGreaterThan(0);
    const files = Object.fromEntries(blocks.map((block, i) => [`readme-${i + 1}.mts`, block]));
    expect(tsc('ts-esm', { module: 'NodeNext', moduleResolution: 'NodeNext' }, files)).toBe('');
  }, 120_000);

  it("types createEventBus's transport block and subscribe's options: a built-in's misspelt option fails to compile; a registered transport declares its block and options by augmenting 'eventlane'", () => {
    const program = `import { createEventBus, defineEvents } from 'eventlane';
import { z } from 'zod';
declare module 'eventlane' {
  interface TransportConfigs {
    'my-queue': { type: 'my-queue'; url: string };
  }
  interface TransportSubscribeOptions {
    'my-queue': { prefetch?: number };
  }
}
const events = defineEvents({ 'a.b': z.object({ x: z.number() }) });
export async function main(): Promise<void> {
  // @ts-expect-error misspelt option of a built-in transport
  await createEventBus({ service: 's', events, transport: { type: 'memory', partitons: 2 } });
  // @ts-expect-error the declared block needs its url
  await createEventBus({ service: 's', events, transport: { type: 'my-queue' } });
  const queue = await createEventBus({ service: 's', events, transport: { type: 'my-queue', url: 'q://x' } });
  await queue.subscribe('a.b', { group: 'g', prefetch: 10 }, () => {});
  // @ts-expect-error the declared subscribe options: no such option
  await queue.subscribe('a.b', { group: 'g', prefetsh: 10 }, () => {});
  const redis = await createEventBus({ service: 's', events, transport: { type: 'redis-streams', url: 'redis://127.0.0.1:6379' } });
  await redis.subscribe('a.b', { group: 'g', concurrency: 8, minIdleMs: 60_000 }, () => {});
  // @ts-expect-error misspelt subscribe option of a built-in transport
  await redis.subscribe('a.b', { group: 'g', concurency: 8 }, () => {});
  await createEventBus({ service: 's', events, transport: { type: 'undeclared-queue', anything: 1 } });
}
`;
    expect(tsc('ts-esm-augment', { module: 'NodeNext', moduleResolution: 'NodeNext' }, { 'augment.mts': program })).toBe('');
  }, 120_000);

  it('resolves the types of the root and both subpaths in a CommonJS project on the older module resolution (module CommonJS, node10)', () => {
    const program = `import { createEventBus, defineEvents, ValidationError } from 'eventlane';
import { openRedisStreamsAdmin, type RedisStreamsTransport } from 'eventlane/redis-streams';
import { pinCurrentThread, type NativeTransport } from 'eventlane/native';
import { z } from 'zod';
export async function main(): Promise<string> {
  const events = defineEvents({ 'order.created': z.object({ orderId: z.string() }) });
  const bus = await createEventBus({ service: 's', events, transport: { type: 'native' } });
  const totals: number = (bus.transport as NativeTransport).totals('order.created').pushed;
  const admin: unknown = (bus.transport as unknown as RedisStreamsTransport).admin;
  // @ts-expect-error wrong payload
  await bus.publish('order.created', { orderId: 1 }).catch((e: unknown) => e instanceof ValidationError);
  return typeof openRedisStreamsAdmin + typeof pinCurrentThread + totals + typeof admin;
}
`;
    expect(tsc('ts-cjs-node10', { module: 'CommonJS', moduleResolution: 'node10', esModuleInterop: true }, { 'main.ts': program })).toBe('');
  }, 120_000);

  it("compiles without the consumer listing Node's types (types: [], TypeScript 6+'s default): the declarations reference them", () => {
    // One program per entry point: ioredis's own declarations reference Node's types, which would hide a
    // missing reference in the root's when both are imported.
    const body = `const events = defineEvents({ 'order.created': z.object({ orderId: z.string() }) });
export async function main(): Promise<void> {
  const bus = await createEventBus({ service: 's', events, transport: { type: 'native' } });
  await bus.publish('order.created', { orderId: 'o-1' });
}
`;
    const programs: Record<string, string> = {
      root: `import { createEventBus, defineEvents } from 'eventlane';\nimport { z } from 'zod';\n${body}`,
      native: `import { createEventBus, defineEvents } from 'eventlane';\nimport { pinCurrentThread } from 'eventlane/native';\nimport { z } from 'zod';\n${body}export const pin = pinCurrentThread;\n`,
      redis: `import { createEventBus, defineEvents } from 'eventlane';\nimport { openRedisStreamsAdmin } from 'eventlane/redis-streams';\nimport { z } from 'zod';\n${body}export const open = openRedisStreamsAdmin;\n`,
    };
    for (const [name, program] of Object.entries(programs)) {
      expect(tsc(`ts-no-node-types-${name}`, { module: 'NodeNext', moduleResolution: 'NodeNext', types: [] }, { 'main.mts': program }), name).toBe('');
      expect(tsc(`ts-no-node-types-${name}-cjs`, { module: 'CommonJS', moduleResolution: 'node10', esModuleInterop: true, types: [] }, { 'main.ts': program }), name).toBe('');
    }
  }, 120_000);

  it('takes options whose value may be undefined under exactOptionalPropertyTypes (tsc --init of TypeScript 7 sets it), as the run time does', () => {
    const program = `import { createEventBus, defineEvents, type Logger } from 'eventlane';
import { z } from 'zod';
declare const maybe: { key?: string; logger?: Logger; n?: number; group: string };
export async function main(): Promise<void> {
  const events = defineEvents({ 'order.created': z.object({ orderId: z.string() }) });
  const bus = await createEventBus({ service: 's', events, transport: { type: 'memory' }, logger: maybe.logger, drainTimeoutMs: maybe.n, batching: undefined });
  await bus.subscribe('order.created', { group: maybe.group, consumer: maybe.key, concurrency: maybe.n, maxDeliveries: maybe.n, retry: { backoff: { initialMs: maybe.n } } }, () => {});
  await bus.publish('order.created', { orderId: 'o-1' }, { key: maybe.key, correlationId: maybe.key, headers: undefined });
  await bus.publishMany('order.created', [{ orderId: 'o-2' }], { key: maybe.key });
  await bus.idle({ timeoutMs: maybe.n, type: undefined });
  await bus.close();
}
`;
    expect(tsc('ts-exact-optional', { module: 'NodeNext', moduleResolution: 'NodeNext', exactOptionalPropertyTypes: true }, { 'main.mts': program })).toBe('');
    // The run time takes the same undefined values.
    const run =
      program
        .replace(/^import \{ createEventBus, defineEvents, type Logger \} from 'eventlane';/m, "import { createEventBus, defineEvents } from 'eventlane';")
        .replace(/^declare const maybe.*$/m, "const maybe = { group: 'g' };")
        .replace(/: Promise<void>/, '')
        .replace(/export async function main\(\)/, 'async function main()') + 'await main();\nconsole.log("ok");\n';
    writeFileSync(join(dir, 'exact-optional.mjs'), run);
    expect(execFileSync(process.execPath, ['exact-optional.mjs'], { cwd: dir, encoding: 'utf8' }).trim()).toBe('ok');
  }, 120_000);

  it('ships type declarations for both entry points', () => {
    const pkg = JSON.parse(execFileSync('cat', [join(dir, 'node_modules/eventlane/package.json')], { encoding: 'utf8' }));
    expect(pkg.exports['.'].import.types).toMatch(/\.d\.ts$/);
    execFileSync('test', ['-f', join(dir, 'node_modules/eventlane', pkg.exports['.'].import.types)]);
    execFileSync('test', ['-f', join(dir, 'node_modules/eventlane', pkg.exports['.'].require.types)]);
  });
});
