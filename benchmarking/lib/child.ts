/**
 * Child-process entry of the worker-process runner: the parent forks one of these per measured
 * iteration (`node --expose-gc .bench-build/benchmarking/lib/child.js`; `--import tsx child.ts` from source), sends an IterationRequest over
 * IPC and gets back `{ ok: true, results }` or `{ ok: false, error }`.
 */
import { firstLine, runIterationsHere, type IterationRequest } from './iterate.js';
import { findScenario } from '../scenarios/index.js';

// The CLI went (killed, SIGTERM from a CI timeout): its iteration is of no use to anyone, and an orphan would
// keep running it for up to --iteration-timeout x (warmups + 1) on a shared machine.
process.once('disconnect', () => process.exit(1));

process.once('message', async (req: IterationRequest) => {
  let reply: unknown;
  try {
    const scenario = findScenario(req.scenario);
    reply = { ok: true, results: await runIterationsHere(scenario, req) };
  } catch (err) {
    reply = { ok: false, error: firstLine(err), stack: err instanceof Error ? err.stack : undefined };
  }
  process.send!(reply, () => process.exit(0));
});
