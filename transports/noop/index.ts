/**
 * The no-op transport: accepts every write at once and discards it, so a benchmark through it measures
 * the library's own overhead (validation, envelopes, batching). It has no consumers.
 */
import { z } from 'zod';
import { parseConfig, withRemovedOptions } from '../../src/config.js';
import { ConfigError } from '../../src/errors.js';
import type { PublishUnit, Transport, TransportCapabilities, TransportSubscription, WriteResult } from '../../src/transport.js';

export const noopConfigSchema = withRemovedOptions(
  z
    .object({
      type: z.literal('noop'),
      /** Partitions per event type (the bus still picks one per event). @default 1 */
      partitions: z.number().int().min(1).max(4096).default(1),
    })
    .strict(),
  {
    encode: 'the noop transport takes events unencoded; a transport that takes JSON declares capabilities.encoding: json',
    maxInFlight: 'the noop transport takes one write at a time (capabilities.maxInFlight: 1); its writes complete at once',
  },
);

/** The `noop` transport's config block, as `createEventBus` takes it. */
export type NoopTransportConfig = z.input<typeof noopConfigSchema>;

export class NoopTransport implements Transport {
  readonly type = 'noop';
  readonly capabilities: TransportCapabilities;
  /** Events accepted so far. */
  accepted = 0;

  constructor(private readonly config: z.output<typeof noopConfigSchema>) {
    this.capabilities = { encoding: 'none', maxInFlight: 1, maxEventBytes: Number.MAX_SAFE_INTEGER };
  }

  async connect(): Promise<void> {}

  partitionsFor(): number {
    return this.config.partitions;
  }

  write(units: readonly PublishUnit[]): Promise<WriteResult> {
    for (let i = 0; i < units.length; i++) this.accepted += units[i]!.events.length;
    return Promise.resolve(undefined);
  }

  async subscribe(): Promise<TransportSubscription> {
    throw new ConfigError('The noop transport discards events; it cannot be subscribed to. Use memory, native or redis-streams.');
  }

  async close(): Promise<void> {}
}

export function createNoopTransport(config: Record<string, unknown>): NoopTransport {
  return new NoopTransport(parseConfig(noopConfigSchema, config, 'transport'));
}
