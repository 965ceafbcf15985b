/**
 * The report document (what `--json` writes) and the environment it was measured in.
 */
import { execFileSync } from 'node:child_process';
import { cpus, loadavg, totalmem, platform, release } from 'node:os';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ScenarioResult } from '../lib/types.js';

export const SCHEMA = 'eventlane-benchmark/1';

export interface Environment {
  cpuModel: string;
  cores: number;
  memoryMb: number;
  os: string;
  node: string;
  v8: string;
  /** 1/5/15-minute load averages at the start: a loaded machine gives noisy figures. */
  loadAvg: number[];
  gitCommit: string | null;
  redisVersion: string | null;
  /** Flags the benchmark child processes ran with beyond the CLI's own (`--node-option`); absent when none. */
  nodeOptions?: string[];
}

/** ", node options ..." for a report header, or '' when the children ran with the CLI's own flags only. */
export function nodeOptionsText(e: Environment): string {
  const part = nodeOptionsPart(e);
  return part === undefined ? '' : `, ${part}`;
}

/** The header's item naming the run's `--node-option` flags (`node options ...`); undefined when there were none. */
export function nodeOptionsPart(e: Environment): string | undefined {
  return e.nodeOptions?.length ? `node options ${e.nodeOptions.join(' ')}` : undefined;
}

export interface BenchReport {
  schema: typeof SCHEMA;
  generatedAt: string;
  command: string;
  environment: Environment;
  runs: ScenarioResult[];
  /** Why the figures may not be worth much (a short measured window, a loaded machine): `runNotices`. */
  notices?: string[];
}

export function environment(redisVersion: string | null): Environment {
  let gitCommit: string | null = null;
  try {
    // From this file's directory (the checkout, or .bench-build inside it), not the working directory.
    const cwd = dirname(fileURLToPath(import.meta.url));
    gitCommit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd, stdio: ['ignore', 'pipe', 'ignore'] })
      .toString()
      .trim();
  } catch {
    /* not a checkout */
  }
  return {
    cpuModel: cpus()[0]?.model.trim() ?? 'unknown',
    cores: cpus().length,
    memoryMb: Math.round(totalmem() / 1048576),
    os: `${platform()} ${release()}`,
    node: process.versions.node,
    v8: process.versions.v8,
    loadAvg: loadavg().map((l) => Math.round(l * 100) / 100),
    gitCommit,
    redisVersion,
  };
}
