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
  key?: string | undefined;
  correlationId?: string | undefined;
  causationId?: string | undefined;
  headers?: EventHeaders | undefined;
  /**
   * Deliver no earlier than this many milliseconds from now (docs/delayed-delivery.md). A delayed event is not
   * ordered against its key's other events. Not with `deliverAt`.
   */
  delayMs?: number | undefined;
  /** Deliver no earlier than this time (a Date, or epoch milliseconds); a time in the past delivers at once. Not with `delayMs`. */
  deliverAt?: Date | number | undefined;
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
  /** The last clock reading used; before the first, -Infinity: every reading is later. */
  private lastMs = -Infinity;
  private prefix = '';
  private seq = 0;
  private readonly node: string;

  constructor(node = base32(Math.floor(Math.random() * 2 ** 30), 6)) {
    this.node = node;
  }

  /** Everything but the last two characters of the id `step` made last, rebuilt every 1024 ids (or when the clock moves). */
  get head(): string {
    return this.current;
  }
  private current = '';
  private headBlock = -1;

  /**
   * Makes the next id without building its string: returns the index of its last two characters
   * (`idTail(low)`); `head` holds the other 24 until the next call. The bus keeps the two parts, so an
   * event's id costs no string unless something asks for it, and transports write ids as bytes.
   */
  step(now: number): number {
    const s = this.seq++;
    const block = Math.floor(s / 1024);
    if (block !== this.headBlock || now > this.lastMs) this.rebuild(now, s, block);
    return s & 1023;
  }

  /**
   * The head for a new block of 1024 ids or a clock that moved on. One path for both, every store made
   * each time: a store that ran only when the clock moved would run once per publishMany call (one publish
   * time for the whole call), before V8 kept type feedback for it, and the optimized publish loop of the next
   * call would give up there ("insufficient type feedback"), running on in the interpreter until compiled again.
   * The clock never goes back here (a clock set back keeps the last time), so ids keep increasing.
   */
  private rebuild(now: number, s: number, block: number): void {
    const ms = now > this.lastMs ? now : this.lastMs;
    this.lastMs = ms;
    this.prefix = base32(ms, 10) + this.node;
    this.headBlock = block;
    this.current = idHeadAt(this.prefix, s);
  }

  /**
   * Reserves `n` consecutive ids (n >= 1) for a run of events published at `now`, without making any:
   * returns the first one's sequence number. Id `s` of the run is `idHeadAt(idPrefix, s) + idTail(s & 1023)`,
   * with `idPrefix` as it is after this call. Later ids, of `step` or `reserve`, sort after all of them.
   */
  reserve(now: number, n: number): number {
    const s = this.seq;
    this.seq = s + n;
    const last = s + n - 1;
    // Always rebuilt: one clock time for the whole run, and `step` continues from the run's last block.
    this.rebuild(now, last, Math.floor(last / 1024));
    return s;
  }

  /** The first 16 characters (time and process) of the ids the last `step` or `reserve` made. */
  get idPrefix(): string {
    return this.prefix;
  }

  next(now: number): string {
    const low = this.step(now);
    return this.current + PAIRS[low]!;
  }
}

/** Characters in an id's head (`IdGenerator.head`); the id is the head and `idTail(low)`. */
export const ID_HEAD_LENGTH = 24;

/**
 * The head (all but the last two characters) of the id with sequence number `s` under `prefix` (time and
 * process, `IdGenerator.idPrefix`): 6 characters for the bits of `s` above 20, 2 for bits 10..19.
 */
export function idHeadAt(prefix: string, s: number): string {
  return flat(prefix + base32(Math.floor(s / 1048576), 6) + PAIRS[Math.floor(s / 1024) & 1023]!);
}

/** The last two characters of an id made by `IdGenerator.step` (which returned `low`). */
export function idTail(low: number): string {
  return PAIRS[low]!;
}

/**
 * Flattens a concatenated (rope) string into one contiguous string. Strings that outlive a young-GC
 * cycle (events waiting in a batch) are cheaper to keep, copy and write when flat.
 */
export function flat(s: string): string {
  s.charCodeAt(0);
  return s;
}

const PAIRS: string[] = Array.from({ length: 1024 }, (_, i) => base32(i, 2));
