/**
 * A function with a long loop that runs once per call is compiled on the fly (OSR) and again as a whole
 * before the code after its loop ever ran; that code then has no type feedback, and the next call's
 * optimized code gives up there and runs on in the interpreter until compiled again. A process that
 * publishes one large array per bus (a benchmark's measured round, a batch job) would hit that in
 * publishMany, enqueueMany, the id generator's clock step and the unit tracking of every second call: so the
 * loops are in functions of their own (src/bulk-publish.ts `parseAll`, `queueSlice`; src/bulk-call.ts), and every
 * store of the id generator's head runs on one path. This runs such a process with `--trace-deopt` and checks that
 * none of the library's bulk publish functions gives up during the second and third calls.
 */
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const fixture = fileURLToPath(new URL('./fixtures/bulk-deopts.ts', import.meta.url));

/** The library's bulk publish path (names as V8 prints them). */
const BULK_PATH = new Set(['publishMany', 'parseAll', 'parse', 'enqueueMany', 'queueSlice', 'make', 'step', 'rebuild', 'track', 'addFitted', 'push', 'Outgoing']);

/** Functions deoptimized between the start and the end of the second and later calls. */
function deoptsInLaterCalls(type: string): string[] {
  const out = execFileSync(process.execPath, ['--trace-deopt', '--import', 'tsx', fixture, type], { encoding: 'utf8', timeout: 60_000, maxBuffer: 256 * 1024 * 1024 });
  expect(out).toContain('### done');
  const names: string[] = [];
  let inCall = false;
  for (const line of out.split('\n')) {
    const mark = /^### (call|end) (\d+)/.exec(line);
    if (mark) inCall = mark[1] === 'call' && Number(mark[2]) >= 1;
    if (!inCall || !line.startsWith('[bailout')) continue;
    const m = /deoptimizing [^<]*<JSFunction ([^ >]*)/.exec(line);
    if (m) names.push(`${m[1]} (${/reason: ([^)]*)\)/.exec(line)?.[1] ?? '?'})`);
  }
  return names;
}

describe('V8: a second large publishMany runs the code the first one optimized', () => {
  // Only deopts for missing feedback: the JIT is not deterministic, and an occasional other one ("wrong
  // map" when V8 compiled while only one shape had been seen) comes and goes from run to run. Missing
  // feedback in publishMany, enqueueMany or make (the id generator's step) is what the split loops prevent.
  it.each(['memory', 'native'])(
    '%s',
    (type) => {
      const gaveUp = deoptsInLaterCalls(type).filter((n) => BULK_PATH.has(n.split(' ')[0]!) && n.includes('Insufficient type feedback'));
      expect(gaveUp).toEqual([]);
    },
    90_000,
  );
});
