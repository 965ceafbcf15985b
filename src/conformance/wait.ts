/** Waiting and naming helpers of the conformance suite (test/helpers/wait.ts re-exports them for the repository's tests). */

/** Polls `check` until it returns true or `timeoutMs` passes; throws with `what` on timeout. */
export async function waitFor(check: () => boolean | Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return;
    if (Date.now() > deadline) throw new Error(`Timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(10);
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

let counter = 0;
/** A name no other caller in this process gets: for a target's broker name, key prefix or group. */
export function uniqueName(prefix = 't'): string {
  return `${prefix}-${process.pid}-${Date.now().toString(36)}-${(counter++).toString(36)}`;
}
