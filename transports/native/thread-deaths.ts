/**
 * What happens when a consumer thread of a native group dies without handing its events back (a crash,
 * `process.exit` in a handler). `ThreadDeaths` takes back what it held and charges the death to the events
 * it was running, dead-lettering one that keeps killing threads; `mayRestart` is the crash-loop guard (at
 * most MAX_RESTARTS_PER_MINUTE replacements per member), and `reportDeath` says in the log what became of
 * the thread and its events, and whether it is to be replaced.
 */
import { deadLetterOf, pastLastAttempt } from '../../src/delivery-rules.js';
import type { Logger } from '../../src/logger.js';
import type { EventEnvelope } from '../../src/envelope.js';
import type { JsonReader } from '../../src/json-reader.js';
import type { DeadLetter, SubscriptionSpec } from '../../src/transport.js';
import type { PartitionCore } from '../../native/js/core-api.js';
import type { Pending } from './consumer.js';
import { InFlightAtDeath } from './in-flight.js';
import type { ConsumerThread, WorkerMember } from './members.js';
import { decodeRecords, detached, toPlainEnvelope } from './record-decode.js';

/** A thread that dies is replaced, at most this many times per minute per member. */
const MAX_RESTARTS_PER_MINUTE = 5;
/** Events whose thread died, remembered to dead-letter one that keeps killing threads. */
const MAX_TRACKED_DEATHS = 10_000;

/** An event taken back from a dead thread, and whether the thread had started its handler. */
interface Taken {
  item: Pending;
  started: boolean;
}

/** What a death gave back (`back`, `recovered` of them) and lost (`lost`: records popped and not held). */
export interface TakenBack {
  back: Pending[];
  recovered: number;
  lost: number;
}

/** The group a ThreadDeaths works for. */
export interface DeathsContext {
  readonly core: PartitionCore;
  readonly lane: number;
  readonly type: string;
  readonly group: string;
  readonly source: string;
  /** Threads keep what they pop in the ring until finished (GroupOptions.hold). */
  readonly hold: boolean;
  /** Parses the payloads of records taken back. */
  readonly read: JsonReader;
  readonly addDead: (dl: DeadLetter) => void;
}

export class ThreadDeaths {
  /** How many threads died on each event (the newest MAX_TRACKED_DEATHS events). */
  private readonly deaths = new Map<string, number>();

  constructor(private readonly c: DeathsContext) {}

  /**
   * Takes back what a dead thread held: the records it popped and had not finished (still in the ring under
   * `hold`) and the events it had parked with us, for the group's other threads or its replacement. The
   * death is charged to the events whose handlers the thread had started and not finished (`charge`); what
   * it held and had not started goes back as it was. Without `hold` (drop-oldest) the records it popped are
   * gone, but for a batch it died with between its pop and its ack (see WorkerConsumer.countThenAck),
   * taken back here too: `lost` is its last published count less what was taken back. `laneFreed`: no core
   * call may name the lane.
   */
  recover(dead: ConsumerThread, laneFreed: boolean): TakenBack {
    const running = new InFlightAtDeath(dead.inFlight);
    const taken: Taken[] = [];
    for (const it of dead.parked.values()) taken.push({ item: it, started: running.started(it.env.id, it.partition, undefined) });
    const { core, lane } = this.c;
    if (!core.closed && !laneFreed) {
      // (A closed core: the transport is closing and stops its threads; nothing to give back to. The lane is
      // never freed here: this thread counts as running until after this.)
      for (const p of dead.owned) {
        // Its records alone: another thread (or a main-thread member) may hold records of a partition this
        // one owned before a rebalance.
        const got = core.takeHeld(lane, p, dead.holder);
        if (got === null) continue;
        const envs: EventEnvelope[] = [];
        decodeRecords(got[0], got[1], got[1].length - 1, this.c.type, this.c.source, false, this.c.read, envs);
        envs.forEach((env, k) => taken.push({ item: { env: toPlainEnvelope(env), attempt: 1, partition: p }, started: running.started(env.id, p, k) }));
      }
    }
    const lost = this.c.hold ? 0 : Math.max(0, Atomics.load(dead.held, 0) - taken.length);
    const back = this.charge(taken, running.count === 1, dead.member?.spec);
    return { back, recovered: back.length, lost };
  }

  /**
   * Charges a thread's death to each event it had started (`Taken.started`); returns what goes back to the
   * group. A death is proven against an event when it was the only one running in the thread (`alone`):
   * with concurrency > 1 the events running beside the one that killed the thread are charged too, so an
   * event charged once is delivered again (attempt raised) to run alone, and is dead-lettered with
   * ConsumerThreadDied only once it has been running at `maxDeliveries` deaths, the last of them alone.
   * An event that kills every thread that runs it is therefore dead-lettered, and one that only shared a
   * thread with it is not: after its first death the killer runs alone, so it shares no other.
   */
  private charge(taken: readonly Taken[], alone: boolean, spec: SubscriptionSpec | undefined): Pending[] {
    const back: Pending[] = [];
    for (const { item: it, started } of taken) {
      if (!started) {
        back.push(it);
        continue;
      }
      const deaths = (this.deaths.get(it.env.id) ?? 0) + 1;
      this.deaths.delete(it.env.id);
      // Run again, it would be delivery deaths + 1: past the last when the thread died maxDeliveries times.
      if (spec !== undefined && alone && pastLastAttempt(spec, deaths + 1)) {
        const error = `ConsumerThreadDied: the consumer thread holding this event died ${deaths} times`;
        this.c.addDead(deadLetterOf(it.env, this.c.group, it.partition, Math.max(it.attempt, deaths), error));
        continue;
      }
      this.deaths.set(detached(it.env.id), deaths); // kept for long: not a view of the records' text
      back.push({ ...it, attempt: Math.max(it.attempt, 1 + deaths), alone: true });
    }
    while (this.deaths.size > MAX_TRACKED_DEATHS) this.deaths.delete(this.deaths.keys().next().value!);
    return back;
  }
}

/** Whether `member` may start another thread (at most MAX_RESTARTS_PER_MINUTE a minute); counts it if so. */
export function mayRestart(member: WorkerMember, logger: Logger, fields: Record<string, unknown>): boolean {
  const now = Date.now();
  while (member.restarts.length > 0 && now - member.restarts[0]! > 60_000) member.restarts.shift();
  if (member.restarts.length >= MAX_RESTARTS_PER_MINUTE) {
    logger.error({ ...fields, restarts: member.restarts.length }, 'native consumer thread died again; not restarting it (crash loop); its partitions go to the remaining threads');
    return false;
  }
  member.restarts.push(now);
  return true;
}

/**
 * Logs the death of a thread that was serving (`taken`: what it gave back) and says whether a new thread
 * takes its place: not when its subscription is still starting (`member` undefined: the subscribe replaces it
 * once started), nor when it is closing (`current` false), nor in a crash loop (`mayRestart`).
 */
export function reportDeath(member: WorkerMember | undefined, current: boolean, taken: TakenBack, logger: Logger, group: string): boolean {
  const { recovered, lost } = taken;
  const held = (to: string): string => (lost > 0 ? `up to ${lost} event(s) it held are lost (backpressure 'drop-oldest' does not hold them)` : `the ${recovered} event(s) it held go to ${to}`);
  if (member === undefined) {
    // Ready, then dead while the subscription's other threads still load: joinWorkers starts its replacement.
    logger.error({ group, recovered, lost }, `native consumer thread died while its subscription was starting; ${held("the group's other members")}; replaced once the subscription has started`);
    return false;
  }
  if (!current) {
    // Its subscription is closing: no new thread, but the death is logged (a handler killing its thread
    // during close() must leave a trace); what it held is taken back all the same.
    logger.error({ group, recovered, lost }, `native consumer thread died while its subscription was closing; ${held("the group's other members")}; not replaced`);
    return false;
  }
  if (!mayRestart(member, logger, { group, recovered, lost })) return false;
  logger.error({ group, recovered, lost }, `native consumer thread died; ${held("the group's other threads")}; starting a new thread`);
  return true;
}
