/**
 * publishMany on the native transport writes the payloads as bytes at publish (`capabilities.input` `runBytes`): the
 * checked payloads are not copied, the records' headers are written into the room before each payload, and the
 * call's buffer is reused by the next call. What a user sees is as on the per-event path: the data delivered
 * is the schema's output as it was at the call, the same ids and order, and every refusal happens before anything is
 * sent.
 */
import { describe, expect, it } from 'vitest';
import { PayloadTooLargeError, ValidationError } from '../../src/index.js';
import { waitFor } from '../helpers/wait.js';
import { nativeBuses, transportOf } from './harness.js';

describe.each(['native', 'js'] as const)('publishMany written as bytes (%s)', (implementation) => {
  const bus = nativeBuses(implementation, 'run-bytes');

  it('is what the native transport asks for, and delivers what the call published, not what the caller changed after', async () => {
    const b = await bus({ partitions: 3 });
    expect(transportOf(b).capabilities.input).toEqual({ kind: 'runBytes', room: 40 });
    const got: { id: string; data: unknown; partition: number }[] = [];
    await b.subscribe('tick', { group: 'g' }, (e, ctx) => void got.push({ id: e.id, data: e.data, partition: ctx.partition }));
    const payloads = Array.from({ length: 5000 }, (_, seq) => ({ seq, pad: seq % 7 === 0 ? `p${seq}` : undefined, extra: 'stripped' }));
    const call = b.publishMany('tick', payloads);
    for (const p of payloads) {
      p.seq = -1; // after the call returned: the bytes were written at the call
      p.pad = 'changed';
    }
    await call;
    await b.publishMany(
      'tick',
      Array.from({ length: 10 }, (_, i) => ({ seq: 5000 + i })),
    ); // the next call reuses the buffer
    await waitFor(() => got.length === 5010, 5_000, 'every event');
    const bySeq = [...got].sort((x, y) => (x.data as { seq: number }).seq - (y.data as { seq: number }).seq);
    expect(bySeq.map((g) => g.data)).toEqual(Array.from({ length: 5010 }, (_, seq) => (seq < 5000 && seq % 7 === 0 ? { seq, pad: `p${seq}` } : { seq })));
    // Ids increase in publish order, and each partition got contiguous parts of each slice, in order.
    const ids = bySeq.map((g) => g.id);
    expect([...ids].sort()).toEqual(ids);
    for (let p = 0; p < 3; p++) {
      const seqs = got.filter((g) => g.partition === p).map((g) => (g.data as { seq: number }).seq);
      expect(seqs).toEqual([...seqs].sort((x, y) => x - y));
      expect(seqs.length).toBeGreaterThan(1000);
    }
  });

  it('writes a call with text to escape or beyond ASCII the usual way, exactly', async () => {
    const b = await bus();
    const got: unknown[] = [];
    await b.subscribe('tick', { group: 'g' }, (e) => void got.push(e.data));
    const pads = ['plain', 'Zürich', 'quote"d', '😀', 'tab\there'];
    const payloads = Array.from({ length: 500 }, (_, seq) => ({ seq, pad: pads[seq % pads.length]! }));
    await b.publishMany('tick', payloads);
    await waitFor(() => got.length === 500, 5_000, 'every event');
    expect(got).toEqual(payloads);
  });

  it('refuses a whole call for an invalid or oversized payload, naming it, and sends none of it', async () => {
    const b = await bus({ maxEventBytes: 300 });
    const got: unknown[] = [];
    await b.subscribe('tick', { group: 'g' }, (e) => void got.push(e.data));
    const bad = await b.publishMany('tick', [{ seq: 1 }, { seq: 2.5 }, { seq: 3 }]).catch((e: unknown) => e);
    expect(bad).toBeInstanceOf(ValidationError);
    expect((bad as ValidationError).issues[0]!.path).toEqual([1, 'seq']);
    const big = await b.publishMany('tick', [{ seq: 1 }, { seq: 2, pad: 'x'.repeat(400) }]).catch((e: unknown) => e);
    expect(big).toBeInstanceOf(PayloadTooLargeError);
    await b.publishMany('tick', [{ seq: 9, pad: 'x'.repeat(200) }]);
    await waitFor(() => got.length === 1, 5_000, 'the valid call');
    expect(got).toEqual([{ seq: 9, pad: 'x'.repeat(200) }]);
  });

  it('publishes the value it checked: each field is read once, so a getter cannot slip in an unchecked value', async () => {
    const b = await bus();
    const got: unknown[] = [];
    await b.subscribe('tick', { group: 'g' }, (e) => void got.push(e.data));
    const payloads = Array.from({ length: 100 }, (_, i) => {
      let reads = 0;
      return {
        get seq(): number {
          return (reads++ === 0 ? i : 'not a number') as number; // valid when checked, invalid on a second read
        },
      };
    });
    await b.publishMany('tick', payloads);
    await waitFor(() => got.length === 100, 5_000, 'every event');
    expect(got).toEqual(Array.from({ length: 100 }, (_, seq) => ({ seq })));
  });

  it('grows the call buffer for payloads larger than it guessed', async () => {
    const b = await bus();
    const got: unknown[] = [];
    await b.subscribe('tick', { group: 'g' }, (e) => void got.push(e.data));
    const payloads = Array.from({ length: 300 }, (_, seq) => ({ seq, pad: 'y'.repeat(seq * 10) }));
    await b.publishMany('tick', payloads);
    await waitFor(() => got.length === 300, 5_000, 'every event');
    expect(got).toEqual(payloads);
  });

  it('a call above 16,384 events takes the path of values, and delivers the same', async () => {
    const b = await bus({ capacity: 32768 });
    let n = 0;
    let inOrder = true;
    await b.subscribe('tick', { group: 'g' }, (e) => {
      if (e.data.seq !== n++) inOrder = false;
    });
    await b.publishMany(
      'tick',
      Array.from({ length: 20_000 }, (_, seq) => ({ seq, extra: 1 })),
    );
    await waitFor(() => n === 20_000, 10_000, 'every event');
    expect(inOrder).toBe(true);
  });

  it('keys and options take the path of values (their records carry extras)', async () => {
    const b = await bus({ partitions: 2 });
    const got: { key?: string; correlationId?: string; seq: number }[] = [];
    await b.subscribe('tick', { group: 'g' }, (e) => void got.push({ key: e.key, correlationId: e.correlationId, seq: e.data.seq }));
    await b.publishMany('tick', [{ seq: 1 }, { seq: 2 }], { key: 'k' });
    await b.publishMany('tick', [{ seq: 3 }], { correlationId: 'c-1' });
    await waitFor(() => got.length === 3, 5_000, 'every event');
    expect(got.sort((x, y) => x.seq - y.seq)).toEqual([
      { key: 'k', correlationId: undefined, seq: 1 },
      { key: 'k', correlationId: undefined, seq: 2 },
      { key: undefined, correlationId: 'c-1', seq: 3 },
    ]);
  });
});
