/**
 * A `WriteSettlement` for tests that call a transport's `write` themselves, without a batcher: it records
 * what the write reported through it.
 */
import type { WriteSettlement } from '../../src/transport.js';

export class RecordedSettlement implements WriteSettlement {
  readonly writtenUnits: number[] = [];
  readonly failures: { unit: number; err: Error; writtenEvents: number }[] = [];
  stalls = 0;

  written(unit: number): void {
    this.writtenUnits.push(unit);
  }

  failed(unit: number, err: Error, writtenEvents = 0): void {
    this.failures.push({ unit, err, writtenEvents });
  }

  stalled(): void {
    this.stalls++;
  }
}
