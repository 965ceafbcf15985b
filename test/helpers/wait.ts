/** Waiting helpers of the tests: the conformance suite's (src/conformance/wait.ts), and bounds on a promise or a close. */
export { sleep, uniqueName, waitFor } from '../../src/conformance/wait.js';

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
