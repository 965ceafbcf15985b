/** Native transport edge cases of worker subscriptions starting and ending: handler modules, workerData, failed subscribes, close() of the bus or transport. */
import { describe, expect, it } from 'vitest';
import { ClosedError, ConfigError } from '../../src/index.js';
import { sleep, waitFor } from '../helpers/wait.js';
import { errorLog, fixture, nativeBuses, ticks, transportOf } from './harness.js';

describe.each(['native', 'js'] as const)('native transport edge cases (%s)', (implementation) => {
  const bus = nativeBuses(implementation, 'native-review');

  it('worker consumers: a handler module compiled to CommonJS (exports.default, exports.setup) runs', async () => {
    const b = await bus({ partitions: 2 });
    const c = new Int32Array(new SharedArrayBuffer(4));
    await b.subscribe('tick', { group: 'cjs', workers: 2, handler: fixture('cjs-handler.cjs'), workerData: { counters: c.buffer } });
    await b.publishMany('tick', ticks(100));
    await waitFor(() => Atomics.load(c, 0) === 100, 5_000, 'every event in the CommonJS handler');
  });

  it('close() twice: the second call resolves only once the first has ended the worker threads', async () => {
    const b = await bus({ partitions: 2 });
    const c = new Int32Array(new SharedArrayBuffer(4));
    await b.subscribe('tick', { group: 'twice', workers: 2, handler: fixture('cjs-handler.cjs'), workerData: { counters: c.buffer } });
    const t = transportOf(b);
    let first = false;
    void t.close().then(() => (first = true));
    await t.close();
    // A second close() resolves only once the first has ended the threads.
    expect(first).toBe(true);
  });

  it('the transport closed under running worker subscriptions ends their threads without logging a death', async () => {
    const { errors, logger } = errorLog();
    const b = await bus({ partitions: 2 }, { logger });
    const c = new Int32Array(new SharedArrayBuffer(4));
    await b.subscribe('tick', { group: 'ended', workers: 2, handler: fixture('cjs-handler.cjs'), workerData: { counters: c.buffer } });
    await b.publishMany('tick', ticks(100));
    await waitFor(() => Atomics.load(c, 0) === 100, 5_000, 'every event in the worker threads');
    // The transport itself, not the bus: its subscriptions are still open, so the threads are ended by terminate().
    await transportOf(b).close();
    await sleep(100); // every thread's exit event has run
    // A thread ended by terminate() is not taken for one that died while its subscription was closing:
    // nothing is logged.
    expect(errors.map((e) => e.msg)).toEqual([]);
  });

  it('worker consumers: workerData a thread cannot be given (a function) rejects subscribe with ConfigError naming workerData', async () => {
    const b = await bus();
    const err = await b.subscribe('tick', { group: 'w', workers: 2, handler: fixture('count-handler.mjs'), workerData: { f: () => 1 } }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).issues[0]!.path).toEqual(['workerData']);
  });

  it('worker consumers: a subscribe that fails leaves no group behind to fill up and stall the publishers; a MessagePort in workerData is a ConfigError too', async () => {
    const b = await bus({ capacity: 8, backpressure: 'block', publishTimeoutMs: 300 });
    const seen: number[] = [];
    await b.subscribe('tick', { group: 'good' }, (e) => void seen.push(e.data.seq));
    const broken = await b.subscribe('tick', { group: 'broken', workers: 1, handler: fixture('throws-on-load.mjs') }).catch((e: unknown) => e);
    expect(broken).toBeInstanceOf(ConfigError);
    const { port1, port2 } = new MessageChannel();
    const port = await b.subscribe('tick', { group: 'port', workers: 1, handler: fixture('count-handler.mjs'), workerData: { port: port1 } }).catch((e: unknown) => e);
    port1.close();
    port2.close();
    // A ConfigError naming workerData, not Node's TypeError (ERR_MISSING_TRANSFERABLE_IN_TRANSFER_LIST).
    expect(port).toBeInstanceOf(ConfigError);
    expect((port as ConfigError).issues[0]!.path).toEqual(['workerData']);
    // The failed groups keep no rings: publishes past the capacity of 8 do not time out.
    for (let i = 0; i < 40; i++) await b.publish('tick', { seq: i });
    await waitFor(() => seen.length === 40, 5_000, 'every event by the group that was joined');
    expect(transportOf(b).stats('tick', 0, 'broken')).toBeUndefined();
    // The name is free: subscribing it again makes a new group, which gets what is published from then on.
    const again: number[] = [];
    await b.subscribe('tick', { group: 'broken' }, (e) => void again.push(e.data.seq));
    await b.publish('tick', { seq: 40 });
    await waitFor(() => again.length === 1, 5_000, 'the new group');
    expect(again).toEqual([40]);
  });

  it('worker consumers: a relative handler path, a bare file name, or a handler module with a handler function too, is a ConfigError naming handler', async () => {
    const b = await bus();
    // A relative path would resolve against eventlane's folder ("Cannot find module"), and a handler function
    // beside a module would never be called.
    const relative = await b.subscribe('tick', { group: 'w', workers: 1, handler: './count-handler.mjs' }).catch((e: unknown) => e);
    expect(relative).toBeInstanceOf(ConfigError);
    expect((relative as ConfigError).message).toContain("new URL('./count-handler.mjs', import.meta.url)");
    // A bare file name is imported as a package: the failure says so and how to name the file.
    const bare = await b.subscribe('tick', { group: 'w', workers: 1, handler: 'count-handler.mjs' }).catch((e: unknown) => e);
    expect(bare).toBeInstanceOf(ConfigError);
    expect((bare as ConfigError).message).toMatch(/imported as a package name; for a file, pass new URL\('\.\/count-handler\.mjs', import\.meta\.url\)/);
    const both = await b.subscribe('tick', { group: 'w', workers: 1, handler: fixture('count-handler.mjs') }, () => {}).catch((e: unknown) => e);
    expect(both).toBeInstanceOf(ConfigError);
    expect((both as ConfigError).issues[0]!.path).toEqual(['handler']);
  });

  it.each([false, true])('close() while a worker handler module is still loading ends its threads and rejects the subscribe with ClosedError (shared broker: %s)', async (shared) => {
    const b = await bus({ partitions: 2 });
    // With `shared`, another bus keeps the named broker open: this bus's close() does not tear the core down.
    const other = shared ? await bus({ partitions: 2, name: transportOf(b).config.name }) : undefined;
    const c = new Int32Array(new SharedArrayBuffer(8));
    const sub = b.subscribe('tick', { group: 'g', workers: 2, handler: fixture('never-ready.mjs'), workerData: { counters: c.buffer } });
    const outcome = sub.then(
      () => 'subscribed',
      (err: unknown) => err,
    );
    await waitFor(() => Atomics.load(c, 0) === 2 && Atomics.load(c, 1) > 0, 10_000, 'both threads in setup');
    await b.close();
    expect(await outcome).toBeInstanceOf(ClosedError);
    // The threads are gone: their timers stopped.
    const ticksThen = Atomics.load(c, 1);
    await sleep(100);
    expect(Atomics.load(c, 1)).toBe(ticksThen);
    if (other) {
      // The broker still works for the bus that shares it.
      const seen: number[] = [];
      await other.subscribe('tick', { group: 'g' }, (e) => void seen.push(e.data.seq));
      await other.publish('tick', { seq: 7 });
      await waitFor(() => seen.length === 1, 5_000, 'the event on the other bus');
    }
  });

  it('close() while one worker thread is ready and the other still loading: the ready one is ended, not logged as a death', async () => {
    const { errors, logger } = errorLog();
    const b = await bus({ partitions: 2 }, { logger });
    const c = new Int32Array(new SharedArrayBuffer(8));
    const sub = b.subscribe('tick', { group: 'g', workers: 2, handler: fixture('never-ready.mjs'), workerData: { counters: c.buffer, ready: 1 } });
    const outcome = sub.then(
      () => 'subscribed',
      (err: unknown) => err,
    );
    await waitFor(() => Atomics.load(c, 0) === 2 && Atomics.load(c, 1) > 0, 10_000, 'one thread ready, the other in setup');
    await sleep(50); // the ready one's message has arrived
    await b.close();
    expect(await outcome).toBeInstanceOf(ClosedError);
    await sleep(100);
    // The ready thread, ended by the close, is not logged as "died while its subscription was starting".
    expect(errors.map((e) => e.msg)).toEqual([]);
  });
});
