import { inspect } from 'node:util';
import { describe, expect, it } from 'vitest';
import { ConnectionError } from '../../src/errors.js';
import { redactCause, redactUrls } from '../../src/redact.js';

/** An error shaped as ioredis makes a reply error: the failed command attached. */
function replyError(message: string, name: string, args: string[]): Error {
  return Object.assign(new Error(message), { command: { name, args } });
}

const printed = (err: unknown): string => inspect(err, { depth: Infinity, showHidden: true });

describe('credentials in cause chains', () => {
  it('hides the arguments of an authentication command anywhere in the chain', () => {
    const auth = replyError('WRONGPASS invalid username-password pair', 'auth', ['alice', 'hunter2']);
    const hello = replyError('NOAUTH', 'HELLO', ['3', 'AUTH', 'bob', 'swordfish']);
    const clusterErr = Object.assign(new Error('Failed to refresh slots cache.'), { lastNodeError: auth });
    const aggregate = new AggregateError([hello], 'all nodes failed');
    const err = new ConnectionError('cannot connect', { cause: new Error('outer', { cause: [clusterErr, aggregate] }) });
    const text = printed(err);
    expect(text).not.toContain('hunter2');
    expect(text).not.toContain('swordfish');
    expect(text).not.toContain('alice');
    expect(text).toContain('WRONGPASS');
  });

  it('keeps the arguments of other commands', () => {
    const xadd = replyError('OOM command not allowed', 'xadd', ['stream:a', '*', 'd', 'payload']);
    redactCause(xadd);
    expect((xadd as Error & { command: { args: string[] } }).command.args).toEqual(['stream:a', '*', 'd', 'payload']);
  });

  it('hides URL passwords in messages and stacks of causes', () => {
    const cause = new Error('connect ECONNREFUSED redis://user:p4ss@10.0.0.1:6379');
    const err = new ConnectionError('cannot connect', { cause });
    expect(printed(err)).not.toContain('p4ss');
    expect(redactUrls('rediss://:secret@host:6380/0 and redis://host')).toBe('rediss://:***@host:6380/0 and redis://host');
  });

  it('survives cycles and non-error causes', () => {
    const a = new Error('a') as Error & { peer?: unknown };
    const b = new Error('b', { cause: a });
    a.peer = b;
    expect(() => new ConnectionError('x', { cause: a })).not.toThrow();
    expect(new ConnectionError('x', { cause: 'plain string' }).cause).toBe('plain string');
  });
});
