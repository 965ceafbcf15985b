/**
 * Lua scripts the consumer runs where a check and a change must be one step (owned-claim.ts,
 * prune-consumer.ts): EVALSHA, with EVAL when the server does not have the script cached yet. A server
 * may refuse scripts altogether (an ACL user without +@scripting, scripting disabled): callers then fall
 * back to plain commands, and `refusesScripts` remembers that per client.
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

  /** Runs the script with one key; rejects with the server's error (see `refusesScripts`). */
  async run(client: Client, key: string, args: readonly (string | number)[]): Promise<unknown> {
    const c = client as unknown as Evaluator;
    try {
      return await c.evalsha(this.sha, 1, key, ...args);
    } catch (err) {
      if (!(err instanceof Error) || !err.message.startsWith('NOSCRIPT')) throw err;
      return c.eval(this.source, 1, key, ...args);
    }
  }
}

/** Whether `client`'s server is known to refuse scripts. */
export function scriptsRefused(client: Client): boolean {
  return noScripts.has(client);
}

/**
 * True (and remembered for `client`) when `err` is the server refusing scripts, not a failure of the
 * script's commands: the caller falls back to plain commands.
 */
export function refusesScripts(client: Client, err: unknown): err is Error {
  if (!(err instanceof Error) || !/^NOPERM|unknown command|scripting/i.test(err.message)) return false;
  noScripts.add(client);
  return true;
}
