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

/** `x.close()` (a bus, a subscription): 'closed', or what is left of it when it takes longer than `ms`. */
export function boundedClose(x: { close(): Promise<void> }, ms: number): Promise<string> {
  return Promise.race([x.close().then(() => 'closed'), sleep(ms).then(() => `still closing after ${ms} ms`)]);
}

let counter = 0;
/** A name no other test in this process uses. */
export function uniqueName(prefix = 't'): string {
  return `${prefix}-${process.pid}-${Date.now().toString(36)}-${(counter++).toString(36)}`;
}
