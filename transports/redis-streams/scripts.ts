/**
 * Lua scripts the consumer runs where a check and a change must be one step (owned-claim.ts,
 * prune-consumer.ts): EVALSHA, with EVAL when the server does not have the script cached yet. A server
 * may refuse scripts altogether (an ACL user without +@scripting, scripting disabled): callers then fall
 * back to plain commands (`runOr`), and that is remembered per client.
 */
import { createHash } from 'node:crypto';
import type { Client } from './connection.js';

interface Evaluator {
  evalsha(sha: string, keys: number, ...args: (string | number)[]): Promise<unknown>;
  eval(script: string, keys: number, ...args: (string | number)[]): Promise<unknown>;
}

/** Clients whose server refused a script: plain commands there from then on. */
const noScripts = new WeakSet<object>();

export class Script {
  private readonly sha: string;
  constructor(private readonly source: string) {
    this.sha = createHash('sha1').update(source).digest('hex');
  }

  /**
   * Runs the script with one key and resolves with its reply; where `client`'s server refuses scripts,
   * resolves with `fallback()`'s instead (plain commands), calling `onRefused` when this call is the one
   * that finds so (once per client, whichever script finds it first). Other errors reject.
   */
  async runOr(client: Client, key: string, args: readonly (string | number)[], fallback: () => Promise<unknown>, onRefused?: (err: Error) => void): Promise<unknown> {
    if (noScripts.has(client)) return fallback();
    try {
      return await this.run(client as unknown as Evaluator, key, args);
    } catch (err) {
      if (!(err instanceof Error) || !/^NOPERM|unknown command|scripting/i.test(err.message)) throw err;
      noScripts.add(client);
      onRefused?.(err);
      return fallback();
    }
  }

  private run(c: Evaluator, key: string, args: readonly (string | number)[]): Promise<unknown> {
    return this.runKeys(c as unknown as Client, [key], args);
  }

  /** Runs the script with `keys` (of one slot, in a Cluster: the first routes it) and resolves with its reply. */
  async runKeys(client: Client, keys: readonly string[], args: readonly (string | number)[]): Promise<unknown> {
    const c = client as unknown as Evaluator;
    try {
      return await c.evalsha(this.sha, keys.length, ...keys, ...args);
    } catch (err) {
      if (!(err instanceof Error) || !err.message.startsWith('NOSCRIPT')) throw err;
      return c.eval(this.source, keys.length, ...keys, ...args);
    }
  }
}
