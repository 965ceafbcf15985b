/**
 * JSON text of values that may nest deeper than `JSON.stringify` can recurse (it throws RangeError at a
 * few thousand levels, while `JSON.parse` reads any depth): a consumer re-writing an event someone else
 * wrote (to a retry stream, to the DLQ) must be able to write back whatever it could read.
 */

/** `JSON.stringify(value)`, or the same text built without recursion when the value nests too deep for it. */
export function stringifyAnyDepth(value: unknown): string {
  try {
    return JSON.stringify(value);
  } catch (err) {
    if (!(err instanceof RangeError)) throw err;
    return stringifyIteratively(value);
  }
}

type Frame = { kind: 'array'; items: unknown[]; i: number } | { kind: 'object'; obj: Record<string, unknown>; keys: string[]; i: number; wrote: boolean };

/** What JSON.stringify writes for `value`, with an explicit stack (no toJSON beyond Date's, no replacer, no indentation). */
export function stringifyIteratively(root: unknown): string {
  const out: string[] = [];
  const stack: Frame[] = [];
  const seen = new Set<object>();
  /** Writes the opening bracket of an array or object and pushes its frame; TypeError for a cycle. */
  const openContainer = (v: object): void => {
    if (seen.has(v)) throw new TypeError('Converting circular structure to JSON');
    seen.add(v);
    if (Array.isArray(v)) {
      out.push('[');
      stack.push({ kind: 'array', items: v, i: 0 });
    } else {
      out.push('{');
      stack.push({ kind: 'object', obj: v as Record<string, unknown>, keys: Object.keys(v), i: 0, wrote: false });
    }
  };
  /** Writes a scalar, or opens a container (pushed on the stack). False when the value is skipped in an object (undefined, functions, symbols). */
  const open = (raw: unknown, inArray: boolean): boolean => {
    let v = raw;
    if (v !== null && typeof v === 'object' && typeof (v as { toJSON?: unknown }).toJSON === 'function') v = (v as { toJSON(): unknown }).toJSON();
    if (v === undefined || typeof v === 'function' || typeof v === 'symbol') {
      if (inArray) out.push('null');
      return inArray;
    }
    if (v === null) out.push('null');
    else if (typeof v === 'number') out.push(Number.isFinite(v) ? String(v) : 'null');
    else if (typeof v === 'boolean' || typeof v === 'string') out.push(JSON.stringify(v));
    else if (typeof v === 'bigint') throw new TypeError('Do not know how to serialize a BigInt');
    else openContainer(v);
    return true;
  };
  if (!open(root, false)) return undefined as unknown as string; // as JSON.stringify(undefined)
  while (stack.length > 0) {
    const f = stack[stack.length - 1]!;
    if (f.kind === 'array') {
      if (f.i < f.items.length) {
        if (f.i > 0) out.push(',');
        open(f.items[f.i++], true);
        continue;
      }
      out.push(']');
      seen.delete(f.items);
    } else {
      if (f.i < f.keys.length) {
        const k = f.keys[f.i++]!;
        const at = out.length;
        out.push(f.wrote ? ',' : '', JSON.stringify(k), ':');
        if (open(f.obj[k], false)) f.wrote = true;
        else out.length = at; // skipped: take back the comma and key
        continue;
      }
      out.push('}');
      seen.delete(f.obj);
    }
    stack.pop();
  }
  return out.join('');
}
