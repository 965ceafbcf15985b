/**
 * Credentials never travel in an error eventlane throws. Client libraries attach the command that failed to
 * their errors (ioredis: `err.command = { name, args }`), and for an authentication command those arguments
 * are the user name and password tried; a URL in a message may carry a password too. `redactCause` scrubs a
 * cause chain in place before it is attached, so `console.error(err)` and Node's print of an uncaught rejection
 * show no secret.
 */

/** Commands whose arguments may hold a credential, lower case. */
const SECRET_COMMANDS = new Set(['auth', 'hello', 'migrate', 'acl', 'config']);

/** Deepest chain followed: causes of causes, and errors held in properties (a Cluster's last node error). */
const MAX_DEPTH = 8;

/** Hides the password of every `scheme://user:password@` in `text`. */
export function redactUrls(text: string): string {
  return text.replace(/(\b[a-z][a-z0-9+.-]*:\/\/[^:/@\s]*:)[^@\s/]+@/gi, '$1***@');
}

/**
 * Scrubs `cause` and everything reachable from it through `cause` and error-valued properties: the arguments
 * of an attached authentication command become `'***'`, URL passwords in messages and stacks are hidden.
 * Returns `cause`.
 */
export function redactCause<T>(cause: T): T {
  scrub(cause, 0, new Set());
  return cause;
}

function scrub(value: unknown, depth: number, seen: Set<object>): void {
  if (depth > MAX_DEPTH || typeof value !== 'object' || value === null || seen.has(value)) return;
  seen.add(value);
  if (Array.isArray(value)) {
    for (const v of value) scrub(v, depth + 1, seen);
    return;
  }
  if (!(value instanceof Error)) return;
  redactCommand((value as { command?: unknown }).command);
  rewrite(value, 'message');
  rewrite(value, 'stack');
  for (const key of Reflect.ownKeys(value)) {
    if (key === 'message' || key === 'stack' || key === 'command') continue;
    scrub(Reflect.get(value, key), depth + 1, seen);
  }
}

function redactCommand(command: unknown): void {
  if (typeof command !== 'object' || command === null) return;
  const c = command as { name?: unknown; args?: unknown };
  if (typeof c.name !== 'string' || !SECRET_COMMANDS.has(c.name.toLowerCase()) || !Array.isArray(c.args)) return;
  try {
    c.args = c.args.map(() => '***');
  } catch {
    // A frozen command object cannot be scrubbed; ioredis's are plain objects.
  }
}

function rewrite(err: Error, key: 'message' | 'stack'): void {
  const text = err[key];
  if (typeof text !== 'string') return;
  const clean = redactUrls(text);
  if (clean === text) return;
  try {
    err[key] = clean;
  } catch {
    // Read-only on this error: left as it is.
  }
}
