/**
 * Redis Cluster seed URLs in the transport config: credentials and TLS they carry apply to every node, seeds
 * that disagree or do not parse are a ConfigError naming cluster.nodes (never a raw URIError).
 */
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config.js';
import { ConfigError } from '../../src/errors.js';
import { redisStreamsConfigSchema } from '../../transports/redis-streams/config.js';

const parse = (nodes: unknown[], extra: Record<string, unknown> = {}) => parseConfig(redisStreamsConfigSchema, { type: 'redis-streams', cluster: { nodes }, ...extra }, 'transport');

describe('redis-streams config: cluster seed URLs', () => {
  it("lifts a seed URL's credentials and TLS for every node", () => {
    const c = parse(['rediss://app:p%40ss@h1:7000', { host: 'h2', port: 7001 }, 'h3:7002']);
    expect(c).toMatchObject({ username: 'app', password: 'p@ss', tls: true });
    expect(parse(['redis://h1:7000']).tls).toBeUndefined();
    expect(c.cluster!.nodes).toEqual([{ host: 'h1', port: 7000 }, { host: 'h2', port: 7001 }, 'h3:7002']);
  });

  it.each([
    [['redis://:a@h1:7000', 'redis://:b@h2:7000'], 'different passwords'],
    [['redis://h1:7000', 'rediss://h2:7000'], 'different schemes'],
    [['redis://u:100%@h1:7000'], 'not a valid redis:// URL'],
  ])('rejects %j with a ConfigError on cluster.nodes', (nodes, message) => {
    expect(() => parse(nodes)).toThrow(ConfigError);
    expect(() => parse(nodes)).toThrow(/transport\.cluster\.nodes: .*/);
    expect(() => parse(nodes)).toThrow(message);
  });
});
