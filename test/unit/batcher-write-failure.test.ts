import { describe, expect, it } from 'vitest';
import { Batcher, Lane, type BatcherOptions } from '../../src/batcher.js';
import { TransportError } from '../../src/errors.js';
import type { OutgoingEvent, PublishUnit, WriteResult } from '../../src/transport.js';

const opts: BatcherOptions = { maxEvents: 100, maxUnitEvents: 100, maxBytes: 1 << 20, maxWaitMs: 0, maxInFlight: 1, maxPendingEvents: 10_000, onFull: 'wait' };

function ev(i: number): OutgoingEvent {
  return { id: String(i), type: 't', time: 0, key: undefined, data: i, json: undefined, partition: 0, correlationId: undefined, causationId: undefined, headers: undefined };
}

describe('Batcher: a write that fails without a reason', () => {
  it('rejects the publishes of a write rejected with undefined (a failed write never resolves them)', async () => {
    const write = (_units: readonly PublishUnit[]): Promise<WriteResult> => Promise.reject(undefined);
    const b = new Batcher(write, opts);
    const lane = new Lane('t', 0);
    const p = b.add(lane, ev(1), 0);
    await expect(p).rejects.toBeInstanceOf(TransportError);
    expect(b.stats.failedEvents).toBe(1);
  });

  it('rejects the publishes of a write that throws undefined', async () => {
    const write = (_units: readonly PublishUnit[]): WriteResult => {
      throw undefined;
    };
    const b = new Batcher(write, opts);
    const p = b.add(new Lane('t', 0), ev(1), 0);
    await expect(p).rejects.toBeInstanceOf(TransportError);
  });
});
