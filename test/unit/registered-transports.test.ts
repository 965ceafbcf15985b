/** `registeredTransports()` lists what `createEventBus` can build, built-ins included, before any bus exists. */
import { describe, expect, it } from 'vitest';
import { registeredTransports, registerTransport, UnknownTransportError } from '../../src/index.js';

describe('registeredTransports', () => {
  it('lists the built-in transports before the first bus is created', () => {
    expect(registeredTransports()).toEqual(expect.arrayContaining(['memory', 'noop', 'native', 'redis-streams']));
  });

  it('lists registered transports beside them', () => {
    registerTransport('listed-custom', () => {
      throw new UnknownTransportError('never built', []);
    });
    expect(registeredTransports()).toEqual(expect.arrayContaining(['memory', 'redis-streams', 'listed-custom']));
  });
});
