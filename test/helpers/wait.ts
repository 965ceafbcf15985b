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

/** What `within` returns for a promise still unsettled when its time is up. */
export const TIMED_OUT = 'timed out' as const;

/** `p`'s value, or TIMED_OUT when `p` takes longer than `ms` (a rejection is passed on; the timer is cleared either way). */
export function within<T>(p: Promise<T>, ms: number): Promise<T | typeof TIMED_OUT> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<typeof TIMED_OUT>((resolve) => (timer = setTimeout(() => resolve(TIMED_OUT), ms)));
  return Promise.race([p, late]).finally(() => clearTimeout(timer));
}

/** `x.close()` (a bus, a subscription): 'closed', or what is left of it when it takes longer than `ms`. */
export async function boundedClose(x: { close(): Promise<void> }, ms: number): Promise<string> {
  const r = await within(
    x.close().then(() => 'closed'),
    ms,
  );
  return r === TIMED_OUT ? `still closing after ${ms} ms` : r;
}

let counter = 0;
/** A name no other test in this process uses. */
export function uniqueName(prefix = 't'): string {
  return `${prefix}-${process.pid}-${Date.now().toString(36)}-${(counter++).toString(36)}`;
}
