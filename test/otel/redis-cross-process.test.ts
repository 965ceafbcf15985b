/**
 * Trace context across processes through a real redis-server: a producer process publishes, a consumer
 * process handles, each with its own SDK exporting its finished spans (test/otel/fixtures/redis-peer.ts). The
 * consumer's process span is linked to the producer's send span (default), or is its child ('child').
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { SpanKind } from '@opentelemetry/api';
import { describe, expect, it } from 'vitest';
import { uniquePrefix } from '../helpers/redis-server.js';
import { redisForFile } from '../integration/redis-common.js';

const r = redisForFile();
const FIXTURE = join(__dirname, 'fixtures/redis-peer.ts');

interface SpanLine {
  name: string;
  kind: number;
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  links: { traceId: string; spanId: string }[];
  attributes: Record<string, unknown>;
}

/** Runs one side to its end; its spans. */
function peer(role: 'producer' | 'consumer', prefix: string, mode: 'link' | 'child'): Promise<SpanLine[]> {
  return new Promise((resolve, reject) => {
    execFile(process.execPath, ['--import', 'tsx', FIXTURE, role, r.server.url, prefix, mode], { encoding: 'utf8', timeout: 40_000 }, (err, stdout, stderr) => {
      if (err) reject(new Error(`${role} failed: ${err.message}\n${stderr}`));
      else
        resolve(
          stdout
            .split('\n')
            .filter((l) => l.startsWith('{'))
            .map((l) => JSON.parse(l) as SpanLine),
        );
    });
  });
}

/** The one span of `spans` named `name`. */
function only(spans: SpanLine[], name: string): SpanLine {
  const found = spans.filter((s) => s.name === name);
  expect(
    found.map((s) => s.name),
    `spans: ${spans.map((s) => s.name).join(', ')}`,
  ).toEqual([name]);
  return found[0]!;
}

describe('eventlane/otel across processes (redis-streams)', () => {
  it("links the consumer process's process span to the producer process's send span", async () => {
    const prefix = uniquePrefix('otel-link');
    const [consumer, producer] = await Promise.all([peer('consumer', prefix, 'link'), peer('producer', prefix, 'link')]);
    const send = only(producer, 'send order.created');
    const process = only(consumer, 'process order.created');
    expect([send.kind, process.kind]).toEqual([SpanKind.PRODUCER, SpanKind.CONSUMER]);
    expect(send.attributes['messaging.system']).toBe('redis-streams');
    expect(process.attributes).toMatchObject({ 'messaging.system': 'redis-streams', 'messaging.consumer.group.name': 'billing', 'messaging.destination.partition.id': '0' });
    expect(process.links).toEqual([{ traceId: send.traceId, spanId: send.spanId }]);
    expect(process.traceId).not.toBe(send.traceId);
    expect(process.parentSpanId).toBeUndefined();
  }, 60_000);

  it("makes it the send span's child, in the producer's trace, with processSpanParent 'child'", async () => {
    const prefix = uniquePrefix('otel-child');
    const [consumer, producer] = await Promise.all([peer('consumer', prefix, 'child'), peer('producer', prefix, 'child')]);
    const send = only(producer, 'send order.created');
    const process = only(consumer, 'process order.created');
    expect(process.traceId).toBe(send.traceId);
    expect(process.parentSpanId).toBe(send.spanId);
    expect(process.links).toEqual([]);
  }, 60_000);
});
