/** What a conformance target describes, and what the suite's tests share while they run on it. */
import type { DeliveryContext, EventEnvelope, Subscription } from '../index.js';
import type { Transport } from '../transport.js';
import type { ConformanceBus, Order } from './events.js';
import type { ConformanceExpect } from './test-api.js';

/** A transport config block: `type` and the transport's own options. */
export type TargetBlock = { type: string } & Record<string, unknown>;

/** A handler of the suite's `order.created` events. */
export type OrderHandler = (e: EventEnvelope<Order>, ctx: DeliveryContext) => unknown;

/** The transport under test, and how to run the suite on it. */
export interface ConformanceTarget {
  /** Names the describe block: `conformance: <name>`. */
  name: string;
  /**
   * A config block for a fresh, isolated transport on each call (a unique broker name, key prefix...). Buses
   * made from one returned block must share topics and groups, as buses on one broker do: the tests of
   * members sharing a group and of two publishers make two buses from one block.
   */
  transport: () => TargetBlock | Promise<TargetBlock>;
  /** Subscribe options of this transport's own, added to every subscription (e.g. short poll times). */
  subscribeOptions?: Record<string, unknown>;
  /** Runs once before the tests (start a server); `teardown` once after them. */
  setup?: () => Promise<void>;
  teardown?: () => Promise<void>;
  /** How long a test waits for deliveries. @default 10000 */
  timeoutMs?: number;
  /** How long one test may run in all (the runner's test timeout). @default 30000 */
  testTimeoutMs?: number;
  /**
   * In-process transports whose group members own partitions: options that keep 8,000 events for a group
   * created later. Adds the test of members that subscribe together sharing that backlog.
   */
  partitionOwners?: { retain: Record<string, unknown> };
  /**
   * How a test's handler is subscribed, when not by `bus.subscribe` itself (a transport whose handlers run in
   * other threads subscribes a bridge module there that calls the handler on the test's thread).
   */
  subscribeVia?: (bus: ConformanceBus, type: 'order.created', options: Record<string, unknown>, handler: OrderHandler) => Promise<Subscription>;
  /**
   * For a transport that can send dead letters back to their group (Redis Streams: `admin().replayDeadLetters`):
   * replays every dead letter of `type` in `group` through `bus`'s transport and returns how many. Adds the check
   * that an event dead-lettered for a version its consumer did not know reaches an upgraded consumer after replay.
   */
  replayDeadLetters?: (bus: { readonly transport: Transport }, type: string, group: string) => Promise<number>;
}

/** What the tests of one run share (made by `describeConformance` for its describe block). */
export interface ConformanceKit {
  readonly target: ConformanceTarget;
  readonly expect: ConformanceExpect;
  /** How long to wait for deliveries. */
  readonly timeout: number;
  /** A bus on the target's transport (or on `transport`), closed after the test. */
  bus(transport?: TargetBlock, extra?: Record<string, unknown>): Promise<ConformanceBus>;
  /** Closes `b` after the test, as the buses of `bus()` are. */
  track<B extends { close(): Promise<void> }>(b: B): B;
  subscribe(b: ConformanceBus, type: 'order.created', options: Record<string, unknown>, handler: OrderHandler): Promise<Subscription>;
  /** Subscribe options: the target's own, fast retries, then `o`. */
  subOpts(o: { group: string } & Record<string, unknown>): Record<string, unknown>;
  /** `n` orders with seq (and amount) `from`, `from + 1`, ... */
  orders(n: number, from?: number): Order[];
}

/** One test of the suite. */
export interface ConformanceCase {
  readonly name: string;
  run(k: ConformanceKit): Promise<void>;
}
