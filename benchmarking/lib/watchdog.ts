/**
 * A watchdog for iterations run in the CLI's own process (`--no-fork`). A timer on the main thread cannot
 * fire while the main thread never yields (a synchronous loop, or an unbroken chain of promise callbacks:
 * extreme-batching with 1,000 publishers on noop is one for its whole duration), and nothing in-process
 * can interrupt it (V8's TerminateExecution from another thread corrupts Node's async-hook stack). So a
 * small separate process keeps the deadline: armed before a request, disarmed when it settles or when
 * the main thread's own timer reported it; if the deadline passes first, it prints `error: <message>`
 * on the CLI's stderr and kills the CLI (SIGKILL). It exits when the CLI does (its stdin closes).
 *
 * A process rather than a worker thread: a worker's isolate would add its own heap to the peak RSS measured
 * in this process.
 */
import { spawn, type ChildProcess } from 'node:child_process';

const SCRIPT = `
let timer;
let buf = '';
process.stdin.setEncoding('utf8');
process.stdin.on('data', (d) => {
  buf += d;
  for (let k = buf.indexOf('\\n'); k >= 0; k = buf.indexOf('\\n')) {
    const line = buf.slice(0, k);
    buf = buf.slice(k + 1);
    clearTimeout(timer);
    const m = /^arm (\\d+) (.*)$/.exec(line);
    if (!m) continue;
    timer = setTimeout(() => {
      process.stderr.write('error: ' + m[2] + '\\n', () => {
        try { process.kill(process.ppid, 'SIGKILL'); } catch {}
        process.exit(0);
      });
    }, Number(m[1]));
  }
});
process.stdin.on('end', () => process.exit(0));
`;

export class Watchdog {
  private readonly proc: ChildProcess;

  constructor() {
    this.proc = spawn(process.execPath, ['-e', SCRIPT], { stdio: ['pipe', 'ignore', 'inherit'] });
    this.proc.on('error', () => undefined);
    this.proc.stdin!.on('error', () => undefined);
    // Neither the process nor its pipe keeps the CLI alive.
    this.proc.unref();
    (this.proc.stdin as unknown as { unref?(): void }).unref?.();
  }

  /** Kill this process unless disarmed within `ms`; `message` is one line. */
  arm(ms: number, message: string): void {
    this.proc.stdin!.write(`arm ${Math.round(ms)} ${message.replace(/\n/g, ' ')}\n`);
  }

  disarm(): void {
    this.proc.stdin!.write('off\n');
  }
}
