/**
 * Run-time checks of publish options (what TypeScript rejects, from JavaScript or through `any`): a wrong
 * type or an unknown option is a ConfigError naming it, and nothing is sent.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ConfigError, createEventBus, defineEvents } from '../../src/index.js';

const events = defineEvents({ 'a.b': z.object({ x: z.number() }) });

async function bus() {
  const b = await createEventBus({ service: 'opts', events, transport: { type: 'memory' } });
  const seen: unknown[] = [];
  await b.subscribe('a.b', { group: 'g', startFrom: '0' }, (e) => void seen.push(e));
  return { b, seen };
}

const bad: [string, Record<string, unknown>, (string | number)[]][] = [
  ['a number key', { key: 5 }, ['options', 'key']],
  ['a headers value that is not a string', { headers: { n: 1 } }, ['options', 'headers', 'n']],
  ['headers that are not an object', { headers: 'x' }, ['options', 'headers']],
  ['a correlationId that is not a string', { correlationId: 7 }, ['options', 'correlationId']],
  ['an unknown option (a typo)', { keys: 'k' }, ['options', 'keys']],
];

describe('publish options checked at run time', () => {
  for (const [what, options, path] of bad) {
    it(`publish, tryPublish and publishMany refuse ${what} (ConfigError naming ${path.join('.')}), sending nothing`, async () => {
      const { b, seen } = await bus();
      const err = await b.publish('a.b', { x: 1 }, options as never).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(ConfigError);
      expect((err as ConfigError).issues[0]!.path).toEqual(path);
      expect(() => b.tryPublish('a.b', { x: 1 }, options as never)).toThrow(ConfigError);
      await expect(b.publishMany('a.b', [{ x: 1 }], options as never)).rejects.toBeInstanceOf(ConfigError);
      await b.idle();
      expect(seen).toHaveLength(0);
      await b.close();
    });
  }

  it('publishMany: a key function returning something else than a string or undefined is refused before anything is sent', async () => {
    const { b, seen } = await bus();
    const err = await b.publishMany('a.b', [{ x: 1 }, { x: 2 }], { key: ((d: { x: number }) => (d.x === 2 ? 2 : 'k')) as never }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).message).toMatch(/payload 1/);
    await b.idle();
    expect(seen).toHaveLength(0);
    await b.close();
  });

  it('valid options pass, and undefined values are ignored', async () => {
    const { b, seen } = await bus();
    await b.publish('a.b', { x: 1 }, { key: 'k', correlationId: 'c', causationId: undefined, headers: { traceparent: 't' } });
    await b.publishMany('a.b', [{ x: 2 }], { key: (d) => `k${d.x}`, headers: {} });
    await b.idle();
    expect(seen).toHaveLength(2);
    await b.close();
  });
});
