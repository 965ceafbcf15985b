/**
 * The reference figures the benchmark compares eventlane with: the published reports of the systems eventlane
 * replaces, and the targets set in the project's issues. Each system has a short name a reader of the output
 * understands, what it is, and where its figures were measured; each figure table says the configuration it
 * was measured in. The CLI reads only this module (nothing outside the repository).
 */
import type { SeedFigure } from './lib/types.js';

export type ReferenceId = 'cpp-bus' | 'go-batcher' | 'ts-redis-library' | 'cpp-stream-processor' | 'target-issue-2' | 'target-issue-3' | 'target-issue-5' | 'target-issue-44';

export interface ReferenceSystem {
  id: ReferenceId;
  /** Short name for tables and verdicts. */
  name: string;
  /** What the system is. */
  what: string;
  /** Where its figures were measured. */
  measuredOn: string;
}

export const REFERENCES: Record<ReferenceId, ReferenceSystem> = {
  'cpp-bus': {
    id: 'cpp-bus',
    name: 'C++ lock-free in-process bus',
    what: 'a C++ lock-free in-process event bus: partitioned ring buffers, one consumer thread per partition',
    measuredOn: 'Apple M1, 8 cores, macOS 13, clang -O3',
  },
  'go-batcher': {
    id: 'go-batcher',
    name: 'Go write-batching layer',
    what: 'a Go write-batching layer (goroutine workers, flush delay, batch 1,000) against a no-op backend',
    measuredOn: 'its authors\u2019 machine (unspecified)',
  },
  'ts-redis-library': {
    id: 'ts-redis-library',
    name: 'TypeScript Redis Streams library',
    what: 'a TypeScript event library on Redis Streams (@logistically/events), measured with its own benchmark CLI',
    measuredOn: 'macOS, local Redis; warmup + 3 iterations',
  },
  'cpp-stream-processor': {
    id: 'cpp-stream-processor',
    name: 'C++ stream processor',
    what: 'a C++ stream processor (broker with partitions, consumer groups and file storage), in-process produce/consume',
    measuredOn: 'Linux dev container, -O3 -march=native',
  },
  'target-issue-2': { id: 'target-issue-2', name: 'eventlane target (issue 2)', what: 'the publish-path throughput eventlane is required to reach', measuredOn: 'a target, not a measurement' },
  'target-issue-3': {
    id: 'target-issue-3',
    name: 'eventlane target (issue 3)',
    what: 'the Redis consume throughput and end-to-end latency eventlane is required to reach',
    measuredOn: 'a target, not a measurement',
  },
  'target-issue-5': { id: 'target-issue-5', name: 'eventlane target (issue 5)', what: 'the native transport throughput eventlane is required to reach', measuredOn: 'a target, not a measurement' },
  'target-issue-44': { id: 'target-issue-44', name: 'eventlane target (issue 44)', what: 'the cost observability may add at most', measuredOn: 'a target, not a measurement' },
};

/** Reports written with the report files' own names as sources ("seed 003", "issue 2 target"). */
const LEGACY: [RegExp, ReferenceId][] = [
  [/\b000\b|\b001\b/, 'cpp-bus'],
  [/\b002\b/, 'go-batcher'],
  [/\b003\b/, 'ts-redis-library'],
  [/\b004\b/, 'cpp-stream-processor'],
  [/issue 2\b/, 'target-issue-2'],
  [/issue 3\b/, 'target-issue-3'],
  [/issue 5\b/, 'target-issue-5'],
  [/issue 44\b/, 'target-issue-44'],
];

/** The reference system a figure's `source` names (an id, or a legacy source string), or undefined. */
export function referenceFor(source: string): ReferenceSystem | undefined {
  if (source in REFERENCES) return REFERENCES[source as ReferenceId];
  const hit = LEGACY.find(([re]) => re.test(source));
  return hit ? REFERENCES[hit[1]] : undefined;
}

/** The short name of a figure's source, for output. */
export function referenceName(source: string): string {
  return referenceFor(source)?.name ?? source;
}

/** The reference systems a scenario compares with (`Scenario.seed`: ids or legacy report names), in order. */
export function scenarioReferences(seed: string): ReferenceSystem[] {
  const ids = seed.split(/[;,]\s*/).map((part) => referenceFor(part.trim())?.id);
  return [...new Set(ids.filter((id): id is ReferenceId => id !== undefined))].map((id) => REFERENCES[id]);
}

/** A throughput figure of `ref`, with the configuration it must be compared in. */
export function throughputFigure(ref: ReferenceId, throughput: number, extra: Omit<SeedFigure, 'source' | 'throughput'> = {}): SeedFigure {
  return { source: ref, throughput, ...extra };
}

/** C++ bus, partition scaling: 10,000 events, ~1 ms CPU busy loop each, one consumer per partition (events/s). */
export const CPP_BUS_PARTITION_SCALING: Record<number, number> = { 1: 1159, 4: 4211, 8: 5230, 15: 5269 };

/** C++ bus, latency of a burst of 15,000 ~40-byte events into a 16K queue (microseconds). */
export const CPP_BUS_BURST: Record<'1p1c' | '4p4c', SeedFigure> = {
  '1p1c': { source: 'cpp-bus', latencyUs: { min: 1452, mean: 2954, p50: 3078, p90: 4000, p99: 4133, 'p99.9': 4143, max: 4145 }, setup: { messageCount: 15_000 } },
  '4p4c': { source: 'cpp-bus', latencyUs: { min: 331, mean: 1552, p50: 1557, p90: 2491, p99: 2700, 'p99.9': 2726, max: 2730 }, setup: { messageCount: 15_000 } },
};

/** C++ bus, latency of 50,000 ~40-byte events sent at a steady 10,000/s (microseconds). */
export const CPP_BUS_SUSTAINED: Record<'1p1c' | '4p4c', SeedFigure> = {
  '1p1c': {
    source: 'cpp-bus',
    latencyUs: { min: 0, mean: 22, p50: 15, p90: 57, p99: 69, 'p99.9': 92, max: 1461 },
    note: 'dominated by a 50 us polling sleep',
    setup: { messageCount: 50_000, rate: 10_000 },
  },
  '4p4c': { source: 'cpp-bus', latencyUs: { min: 0, mean: 25, p50: 22, p90: 62, p99: 68, 'p99.9': 83, max: 145 }, setup: { messageCount: 50_000, rate: 10_000 } },
};

/** Go batcher against a no-op backend, 30 s runs, batch 1,000: [flush delay ms, workers, average/s, peak/s]. */
export const GO_BATCHER_TABLE: [delayMs: number, workers: number, avg: number, peak: number][] = [
  [100, 1000, 486_000, 522_000],
  [100, 2000, 533_000, 569_000],
  [50, 4000, 558_000, 592_000],
  [10, 6000, 575_000, 611_000],
  [1, 10000, 564_000, 600_000],
];

/**
 * TypeScript Redis Streams library, publish-only, by `batch-publishers-size`: 100,000 events of 128 B, or
 * 10,000 of 4 KB (events/s).
 */
export const TS_REDIS_PUBLISHING: Record<string, number> = {
  '4000-1-128': 73_076,
  '3000-1-128': 68_847,
  '5000-1-128': 70_710,
  '4000-5-128': 70_161,
  '1-1-128': 2_197,
  '1-5-128': 7_222,
  '4000-1-4096': 4_734,
  '1-1-4096': 1_435,
};

/** C++ stream processor: produce and consume of 50,000 x 100 B on 4 partitions (events/s). */
export const CPP_BROKER_PRODUCE = 320_391;
export const CPP_BROKER_CONSUME = 502_647;
/** C++ stream processor, producer threads x 10,000 events of 100 B (events/s). */
export const CPP_BROKER_PRODUCER_SCALING: Record<number, number> = { 1: 267_763, 2: 436_914, 4: 387_641, 8: 376_082 };
/** C++ stream processor, 20,000 events on 4 partitions consumed by N group members (events/s). */
export const CPP_BROKER_CONSUMER_GROUPS: Record<number, number> = { 1: 434_198, 2: 574_130, 4: 486_478, 8: 379_590 };
/** C++ stream processor, produce throughput by payload size in bytes, 20,000 events each (events/s). */
export const CPP_BROKER_MESSAGE_SIZE: Record<number, number> = { 64: 344_846, 256: 254_697, 1024: 159_531, 4096: 59_429, 16384: 16_714 };
