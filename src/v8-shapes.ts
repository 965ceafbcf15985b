/**
 * The library's V8-specific measures, gathered here. Each stays only while an interleaved benchmark A/B (a
 * build without it against the build with it, pairs alternating in one sitting) shows it pays at least 5%;
 * the figures are in the commit that keeps it and in docs/benchmarks.md. Tests do not pin V8 internals: a
 * measure that stops paying goes after a benchmark says so.
 *
 * What they guard against: optimized code holds the hidden classes (maps) it checks weakly, and a full GC
 * that finds no live object of such a map throws that code away ("weak objects" in `--trace-deopt`). The
 * code then runs in the interpreter until V8 compiles it again.
 *
 * The last closed bus (`keepClosedBus`)
 *   Guards: a process that makes a bus after closing another (a bus per job, per test or per serverless
 *   invocation; each benchmark iteration after its warm-up) keeps the publish path it optimized
 *   (`publishMany`, `parse`, `make`, `enqueueMany`, the batcher's `push`...) across a full GC between the two
 *   buses. The maps of a bus's objects (type states, lanes, publisher, batcher, id generator) depend on the
 *   options and transport it is built with, so objects made at load time cannot keep them: the closed bus does.
 *   Contract: `closeBus` (src/bus-close.ts) hands the bus over as the last step of `close()`, once its
 *   transport has released connections, threads and core memory. At most one closed bus is kept, until the
 *   next bus closes; what its in-process transport retained for `startFrom: '0'` replays (memory `maxLen`,
 *   native `retain`) and its dead letters stay with it until then.
 *
 * Shapes kept for a transport (`keepShapes`)
 *   Guards: a transport whose events and runs all die once written (Redis: nothing in the process holds them
 *   after XADD) keeps its optimized publish path (`make`, `enqueueMany`, `writeIdBytes`, the batch encoder...)
 *   across a full GC while nothing is in flight (a quiet service between bursts, the benchmark's GC after its
 *   warm-up). Only the Redis transport registers them: the in-process transports measure no gain.
 *   Contract: the transport's module calls `keepShapes(...shapeSamples())` once, at load, before any bus makes
 *   events; `shapeSamples` (src/outgoing.ts) builds them through the publish path's constructors with values of
 *   the same representations, so a change to those constructors changes the samples with them. Kept for the
 *   life of the process.
 */

// eslint-disable-next-line @typescript-eslint/no-unused-vars -- written only: holding the bus is its purpose
let lastClosed: object | undefined;

/** Keeps `bus`, closed, until the next bus closes (see the module's comment). */
export function keepClosedBus(bus: object): void {
  lastClosed = bus;
}

/** Objects kept for the life of the process (`keepShapes`). */
const shapes: object[] = [];

/** Keeps `objects` for the life of the process, so their maps outlive any full GC (see the module's comment). */
export function keepShapes(...objects: object[]): void {
  shapes.push(...objects);
}
