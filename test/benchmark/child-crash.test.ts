/**
 * A benchmark child that crashes is reported with the reason it crashed: the error line from its
 * stderr, not Node's trailing "Node.js vXX" banner or a stack frame.
 */
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { crashReason, runInChild } from '../../benchmarking/lib/runner.js';
import { GLOBAL_DEFAULTS } from '../../benchmarking/lib/config.js';
import type { IterationRequest } from '../../benchmarking/lib/iterate.js';

const CRASHING = fileURLToPath(new URL('./fixtures/crashing-child.mjs', import.meta.url));

const req: IterationRequest = {
  scenario: 'publish-overhead',
  variant: { id: 'v', label: 'v', kind: 'eventlane', runner: 'publish', config: GLOBAL_DEFAULTS, params: {} },
  warmups: 0,
  measured: 1,
};

describe('child crash', () => {
  it('rejects with the exit code and the error line of the crash', async () => {
    const err = await runInChild(req, 30_000, CRASHING).then(
      () => undefined,
      (e: Error) => e,
    );
    expect(err).toBeInstanceOf(Error);
    expect(err!.message).toBe('benchmark child exited (1): Error: consumer ring corrupted at slot 7');
  });

  it('crashReason picks the error line out of typical stderr', () => {
    const uncaught = [
      'file:///x/child.js:3',
      '    throw err;',
      '    ^',
      '',
      'Error [ERR_X]: socket hung up',
      '    at a (file:///x:1:1)',
      '    at b (file:///x:2:2) {',
      "  code: 'ERR_X'",
      '}',
      '',
      'Node.js v20.20.2',
    ].join('\n');
    expect(crashReason(uncaught)).toBe('Error [ERR_X]: socket hung up');
    const oom = ['<--- Last few GCs --->', '', 'FATAL ERROR: Reached heap limit Allocation failed - JavaScript heap out of memory', ' 1: 0xb8ed5f node::Abort() [node]', ' 2: 0xa96f6a  [node]'].join(
      '\n',
    );
    expect(crashReason(oom)).toBe('FATAL ERROR: Reached heap limit Allocation failed - JavaScript heap out of memory');
    expect(crashReason('some warning\nlast words\n')).toBe('last words');
    expect(crashReason('')).toBeUndefined();
  });
});
