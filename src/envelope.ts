/**
 * The event envelope (close to CloudEvents field names) and its id generator.
 */

/** W3C trace context and any other string metadata that travels with an event. */
export type EventHeaders = Record<string, string>;

/** One event as handlers receive it. */
export interface EventEnvelope<T = unknown, K extends string = string> {
  /** Unique and time-ordered: ids sort by creation time (26 chars, Crockford base32, ULID-like). */
  readonly id: string;
  /** The event name, e.g. `order.created`. */
  readonly type: K;
  /** The `service` of the bus that published it. */
  readonly source: string;
  /** Publish time, milliseconds since the Unix epoch. */
  readonly time: number;
  /** The validated payload. */
  readonly data: T;
  /** Partition key: events with the same key keep their order. */
  readonly key?: string;
  readonly correlationId?: string;
  readonly causationId?: string;
  /** String metadata; W3C `traceparent`/`tracestate` travel here. */
  readonly headers?: EventHeaders;
}

/** Per-publish options. */
export interface PublishOptions {
  /** Partition key: events with the same key go to the same partition and keep their order. */
  key?: string;
  correlationId?: string;
  causationId?: string;
  headers?: EventHeaders;
}

const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';

function base32(value: number, width: number): string {
  let out = '';
  for (let i = 0; i < width; i++) {
    out = CROCKFORD[value % 32] + out;
    value = Math.floor(value / 32);
  }
  return out;
}

/**
 * Generates ids as `<10 chars ms time><6 chars process random><10 chars sequence>`.
 * The time prefix is rebuilt only when the clock moves (not per event) and never goes backwards,
 * and the sequence increases for every id, so ids from one process are strictly increasing.
 */
export class IdGenerator {
  private lastMs = -1;
  private prefix = '';
  private seq = 0;
  private readonly node: string;

  constructor(node = base32(Math.floor(Math.random() * 2 ** 30), 6)) {
    this.node = node;
  }

  private seqHigh = -1;
  private seqHighText = '';

  next(now: number): string {
    if (now > this.lastMs) {
      this.lastMs = now;
      this.prefix = base32(now, 10) + this.node;
    }
    // Sequence: 6 chars for the bits above 20 (rebuilt every 2^20 ids) + two 2-char table lookups.
    const s = this.seq++;
    const high = Math.floor(s / 1048576);
    if (high !== this.seqHigh) {
      this.seqHigh = high;
      this.seqHighText = base32(high, 6);
    }
    return this.prefix + this.seqHighText + PAIRS[(s >>> 10) & 1023]! + PAIRS[s & 1023]!;
  }
}

const PAIRS: string[] = Array.from({ length: 1024 }, (_, i) => base32(i, 2));
