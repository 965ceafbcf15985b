/**
 * The open-loop pacer of the latency scenarios: every send at or after its intended time, in order, none
 * skipped; in `loop` mode the event loop keeps turning between sends (replies are read while the pacer
 * waits).
 */
import { describe, expect, it } from 'vitest';
import { openLoop } from '../../benchmarking/lib/latency.js';

const COUNT = 2000;
const RATE = 10_000;

/** Runs the pacer while a chain of setImmediate callbacks counts the event loop's turns. */
async function paceCountingTurns(spin: boolean): Promise<{ late: number[]; order: number[]; turns: number; ms: number }> {
  const late: number[] = [];
  const order: number[] = [];
  let turns = 0;
  let running = true;
  const chain = () => {
    turns++;
    if (running) setImmediate(chain);
  };
  setImmediate(chain);
  const t0 = performance.now();
  await openLoop(
    COUNT,
    RATE,
    (i, intended) => {
      order.push(i);
      late.push(performance.now() - intended);
    },
    spin,
  );
  const ms = performance.now() - t0;
  running = false;
  return { late, order, turns, ms };
}

describe('openLoop', () => {
  for (const spin of [false, true]) {
    it(`${spin ? 'spin' : 'loop'}: sends each event once, in order, never before its intended time`, async () => {
      const { late, order, ms } = await paceCountingTurns(spin);
      expect(order).toEqual(Array.from({ length: COUNT }, (_, i) => i));
      expect(Math.min(...late)).toBeGreaterThanOrEqual(-0.001);
      // 2,000 events at 10,000/s: the last is due 199.9 ms after the first.
      expect(ms).toBeGreaterThanOrEqual(((COUNT - 1) / RATE) * 1000 - 1);
    });
  }

  it('loop: the event loop turns while the pacer waits, more than once between sends', async () => {
    const { turns } = await paceCountingTurns(false);
    expect(turns).toBeGreaterThanOrEqual(COUNT * 2);
  });
});
