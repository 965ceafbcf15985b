import { Command } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { redirectedNode, encodeCommand, encodeXack, rawCommand, slotOf, waitCommand, wireCommand, xackHead } from './wire-command.js';

/** ioredis's own request bytes for the same command (numbers become strings as ioredis does). */
function ioredisBytes(name: string, args: (string | number | Buffer)[]): Buffer {
  const cmd = new Command(name, args);
  void cmd.promise;
  const w = cmd.toWritable({});
  return typeof w === 'string' ? Buffer.from(w, 'utf8') : w;
}

function ours(name: string, args: (string | number | Buffer)[]): Buffer {
  return encodeCommand(
    name,
    args.map((a) => (typeof a === 'number' ? String(a) : a)),
  );
}

describe('encodeCommand (RESP request bytes)', () => {
  const cases: [string, (string | number | Buffer)[]][] = [
    ['xadd', ['s:{t}:0', 'MAXLEN', '~', 1000000, '*', 'v', '1', 'data', '{"id":1,"body":"xx"}']],
    ['xack', ['k', 'g', '1700000000000-0', '1700000000000-1']],
    ['xreadgroup', ['GROUP', 'g', 'c', 'COUNT', 1000, 'BLOCK', 5000, 'STREAMS', 'a', 'b', '>', '>']],
    ['xadd', ['k', '*', 'empty', '', 'multi', 'héllo ✓ 😀', 'buf', Buffer.from('[{"a":1}]'), 'emptybuf', Buffer.alloc(0)]],
    ['ping', []],
    ['xadd', ['k', '*', 'long', 'y'.repeat(10_000), 'n', 1234567890]],
  ];
  for (const [name, args] of cases) {
    it(`${name} with ${args.length} arguments is byte-identical to ioredis`, () => {
      expect(ours(name, args).equals(ioredisBytes(name, args))).toBe(true);
    });
  }

  it('lengths of 9, 10, 99, 100 and more bytes are framed exactly', () => {
    for (const len of [0, 1, 9, 10, 11, 99, 100, 101, 999, 1000, 65_536]) {
      const args = ['k', 'x'.repeat(len), 'é'.repeat(len)];
      expect(ours('set', args).equals(ioredisBytes('set', args))).toBe(true);
    }
  });

  it('handles more arguments than its reusable length table holds', () => {
    const args = Array.from({ length: 500 }, (_, i) => `id-${i}`);
    expect(ours('xack', args).equals(ioredisBytes('xack', args))).toBe(true);
  });
});

describe('encodeXack', () => {
  it('is byte-identical to ioredis for one id, many ids and a key of many bytes', () => {
    for (const [key, ids] of [
      ['el:{t:0}', ['1700000000000-0']],
      ['el:{t:0}:retry:g', Array.from({ length: 1200 }, (_, i) => `1700000000${i}-${i % 10}`)],
      ['é:{ordré.créé:12}', ['0-1', '99-99']],
    ] as [string, string[]][]) {
      const head = xackHead(key, 'gröup');
      expect(encodeXack(head, ids).equals(ioredisBytes('xack', [key, 'gröup', ...ids]))).toBe(true);
    }
  });
});

describe('rawCommand routing', () => {
  it("an XREADGROUP routed by its first key lands on the slot of the whole command's keys", () => {
    const keys = ['el:{t:3}', 'el:{t:3}:retry:g'];
    const args = ['GROUP', 'g', 'c', 'COUNT', '10', 'BLOCK', '2000', 'STREAMS', ...keys, '>', '>'];
    const cmd = rawCommand('xreadgroup', encodeCommand('xreadgroup', args), ['GROUP', 'g', 'c', 'STREAMS', keys[0]!, '>']);
    void cmd.promise;
    expect(cmd.getSlot()).toBe(slotOf(keys[0]!));
    expect(cmd.getSlot()).toBe(new Command('xreadgroup', args).getSlot());
    expect(Buffer.from(cmd.toWritable({})).equals(ioredisBytes('xreadgroup', args))).toBe(true);
  });
});

describe('waitCommand and slotOf', () => {
  it("writes WAIT; a stream key's slot is the one ioredis routes its XADD to", () => {
    const key = 'el:{order.created:3}';
    const cmd = waitCommand(2, 500);
    void cmd.promise;
    expect(cmd.toWritable({}).toString()).toBe('*3\r\n$4\r\nwait\r\n$1\r\n2\r\n$3\r\n500\r\n');
    const xadd = new Command('xadd', [key, '*', 'f', 'v']);
    expect(slotOf(key)).toBe(xadd.getSlot());
    expect(slotOf('foo')).toBe(12182); // CLUSTER KEYSLOT foo
    expect(cmd.getSlot()).toBeNull(); // keyless: ioredis itself would send it to any node
  });
});

describe('redirectedNode', () => {
  it("notes the node of an ASK passed to a reject assigned over the command's own, and passes every error on", async () => {
    const cmd = wireCommand('xadd', ['k', '*', 'f', 'v'], ['k']);
    const seen: string[] = [];
    // What ioredis's Cluster does: replace reject with its redirect handler.
    const own = cmd.reject;
    cmd.reject = (err: Error) => {
      seen.push(err.message);
      if (!err.message.startsWith('ASK')) own(err);
    };
    expect(redirectedNode(cmd)).toBeUndefined();
    cmd.reject(new Error('ASK 3999 127.0.0.1:7002'));
    expect(redirectedNode(cmd)).toBe('127.0.0.1:7002');
    cmd.reject(new Error('ERR other'));
    await expect(cmd.promise).rejects.toThrow('ERR other');
    expect(seen).toEqual(['ASK 3999 127.0.0.1:7002', 'ERR other']);
    expect(redirectedNode(new Command('xadd', ['k']))).toBeUndefined();
  });

  it('notes the node of a MOVED as well; the last redirect wins', () => {
    const cmd = wireCommand('xadd', ['k', '*', 'f', 'v'], ['k']);
    cmd.reject = () => {}; // ioredis's Cluster handler, which resends the command
    cmd.reject(new Error('MOVED 3999 127.0.0.1:7003'));
    expect(redirectedNode(cmd)).toBe('127.0.0.1:7003');
    cmd.reject(new Error('ASK 3999 127.0.0.1:7004'));
    expect(redirectedNode(cmd)).toBe('127.0.0.1:7004');
    cmd.reject(new Error('MOVEDX 1 2'));
    expect(redirectedNode(cmd)).toBe('127.0.0.1:7004');
  });
});
