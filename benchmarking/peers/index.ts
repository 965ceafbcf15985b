/**
 * The peer rows of publishing-throughput, consumer-groups and end-to-end on Redis: what a Node team would
 * pick instead of eventlane (BullMQ, @moleculer/channels), measured in the same run as eventlane and its
 * hand-written baselines, a fresh process per iteration like every row (kind 'peer'; `--no-peers` leaves
 * them out). A peer whose packages are not installed is left out, with one line on stderr saying so.
 */
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { BenchConfig, Runner, Variant } from '../lib/types.js';
import { variant } from '../scenarios/helpers.js';
import { bullmqConsume, bullmqEndToEnd, bullmqPublish } from './bullmq.js';
import { moleculerConsume, moleculerEndToEnd, moleculerPublish } from './moleculer.js';
import { BULK, PEER_CONCURRENCY } from './shared.js';

/** What a peer row measures: publishing only, consuming a prefilled backlog, or end-to-end latency. */
export type PeerRole = 'publish' | 'consume' | 'latency';

interface Peer {
  /** The variant id and runner name. */
  id: string;
  name: string;
  /** The packages it needs; the first one's installed version goes in the label. */
  packages: readonly string[];
  /** How it is driven, per role, for the label. */
  how: Record<PeerRole, string>;
  runners: Record<PeerRole, Runner>;
}

const C = PEER_CONCURRENCY;

const PEERS: readonly Peer[] = [
  {
    id: 'peer-bullmq',
    name: 'BullMQ',
    packages: ['bullmq'],
    how: { publish: `addBulk of ${BULK.toLocaleString('en-US')} jobs, ${C} in flight`, consume: `Worker concurrency ${C}`, latency: `add per event, Worker concurrency ${C}` },
    runners: { publish: bullmqPublish, consume: bullmqConsume, latency: bullmqEndToEnd },
  },
  {
    id: 'peer-moleculer-channels',
    name: '@moleculer/channels',
    packages: ['@moleculer/channels', 'moleculer'],
    how: { publish: `Redis adapter, sendToChannel per event, ${C} in flight`, consume: `Redis adapter, handler maxInFlight ${C}`, latency: `Redis adapter, sendToChannel per event, maxInFlight ${C}` },
    runners: { publish: moleculerPublish, consume: moleculerConsume, latency: moleculerEndToEnd },
  },
];

const require = createRequire(import.meta.url);

/** The installed version of `pkg` (its package.json above the file it resolves to), or undefined when it is not installed. */
export function installedVersion(pkg: string, resolve: (p: string) => string = require.resolve): string | undefined {
  let dir: string;
  try {
    dir = dirname(resolve(pkg));
  } catch {
    return undefined;
  }
  for (;;) {
    const file = join(dir, 'package.json');
    if (existsSync(file)) {
      const json = JSON.parse(readFileSync(file, 'utf8')) as { name?: string; version?: string };
      if (json.name === pkg) return json.version;
    }
    const up = dirname(dir);
    if (up === dir) return undefined;
    dir = up;
  }
}

/** `6.7.6` -> `6.x`; below 1.0, where a minor release may break, `0.1.8` -> `0.1.x`. */
export function versionRange(version: string): string {
  const [major, minor] = version.split('.');
  return major === '0' ? `0.${minor}.x` : `${major}.x`;
}

/** Peers already reported missing by this process: one line each, however many scenarios run. */
const reported = new Set<string>();

/**
 * The peer rows of `role` for a run configured by `c` (Redis only; none elsewhere). Peers run one consumer
 * on one stream or queue, so their rows have one consumer and one partition. `resolve`: how a package is
 * found (tests substitute their own).
 */
export function peerRows(c: BenchConfig, role: PeerRole, resolve?: (p: string) => string): Variant[] {
  if (c.transport !== 'redis') return [];
  const rows: Variant[] = [];
  for (const peer of PEERS) {
    const versions = peer.packages.map((p) => installedVersion(p, resolve));
    const missing = peer.packages.filter((_, i) => versions[i] === undefined);
    if (missing.length > 0) {
      if (!reported.has(peer.id)) process.stderr.write(`note: ${peer.name} peer rows skipped: ${missing.join(', ')} not installed (npm install -D ${missing.join(' ')})\n`);
      reported.add(peer.id);
      continue;
    }
    const name = `${peer.name} ${versionRange(versions[0]!)}`;
    rows.push(variant(c, peer.id, `${name} (${peer.how[role]})`, peer.id, { consumers: 1, partitions: 1 }, { peer: name }, { kind: 'peer' }));
  }
  return rows;
}

/** The runners of the peer rows of `role`, by runner name, for a scenario's `runners`. */
export function peerRunners(role: PeerRole): Record<string, Runner> {
  return Object.fromEntries(PEERS.map((p) => [p.id, p.runners[role]]));
}
