import { describe, expect, it } from 'vitest';
import { binaryCodec, detectCodec, jsonCodec } from '../../src/codec.js';
import { DecodeError } from '../../src/errors.js';
import type { OutgoingEvent } from '../../src/transport.js';

const ev = (i: number, extra: Partial<OutgoingEvent> = {}): OutgoingEvent => ({
  id: `01M8230S3BY7G9XJ00000000${String(i).padStart(2, '0')}`,
  type: 'order.created',
  time: 1_700_000_000_000 + i,
  key: undefined,
  data: { n: i, s: 'ü ☃' },
  json: JSON.stringify({ n: i, s: 'ü ☃' }),
  partition: 0,
  correlationId: undefined,
  causationId: undefined,
  headers: undefined,
  ...extra,
});

const batch = [ev(1), ev(2, { key: 'k', correlationId: 'c', causationId: 'z', headers: { traceparent: 'tp' } }), ev(3, { json: undefined })];

describe.each([jsonCodec, binaryCodec])('$name codec', (codec) => {
  it('round-trips envelopes with every optional field', () => {
    const decoded = codec.decode(codec.encode(batch), 'order.created', 'svc');
    expect(decoded).toHaveLength(3);
    expect(decoded[1]).toEqual({
      id: batch[1]!.id,
      type: 'order.created',
      source: 'svc',
      time: batch[1]!.time,
      data: { n: 2, s: 'ü ☃' },
      key: 'k',
      correlationId: 'c',
      causationId: 'z',
      headers: { traceparent: 'tp' },
    });
    expect(decoded[2]!.data).toEqual({ n: 3, s: 'ü ☃' });
    expect(detectCodec(codec.encode(batch))).toBe(codec);
  });

  it('refuses garbage with a DecodeError naming the problem', () => {
    const bad = codec === jsonCodec ? '{"not":"an array"}' : Buffer.from([0xe1, 0x4c, 1, 5, 0, 0, 0, 3]);
    expect(() => codec.decode(bad, 't', 's')).toThrow(DecodeError);
  });
});

describe('binary codec versions', () => {
  it('refuses an unknown version', () => {
    const buf = binaryCodec.encode(batch) as Buffer;
    buf[2] = 9;
    expect(() => binaryCodec.decode(buf, 't', 's')).toThrow(/version 9/);
  });
});
