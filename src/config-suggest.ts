/**
 * "Did you mean": the option names a config schema takes at a path, and the one closest to a misspelt key.
 * Walks zod's definitions (objects, defaults, optionals, nullables, pipes and transforms); a path through
 * anything else (records, unions, passthrough maps) has no known names and gets no suggestion.
 */
import type { z } from 'zod';

interface Def {
  type: string;
  shape?: Record<string, z.ZodType>;
  innerType?: z.ZodType;
  in?: z.ZodType;
}

const defOf = (schema: z.ZodType): Def => (schema as unknown as { _zod: { def: Def } })._zod.def;

/** `schema` with its wrappers (default, optional, nullable, pipe) taken off, down to what parses the value. */
function unwrap(schema: z.ZodType): z.ZodType {
  let at = schema;
  for (;;) {
    const def = defOf(at);
    const next = def.type === 'pipe' ? def.in : def.innerType;
    if (next === undefined) return at;
    at = next;
  }
}

/** The keys the object schema at `path` within `schema` takes; empty where that is not an object schema. */
export function keysAt(schema: z.ZodType, path: readonly PropertyKey[]): string[] {
  let at: z.ZodType | undefined = schema;
  for (const key of path) {
    const def: Def = defOf(unwrap(at));
    at = def.type === 'object' && typeof key === 'string' ? def.shape?.[key] : undefined;
    if (at === undefined) return [];
  }
  const def = defOf(unwrap(at));
  return def.type === 'object' ? Object.keys(def.shape ?? {}) : [];
}

/** Optimal string alignment distance: insertions, deletions, substitutions and adjacent transpositions. */
function distance(a: string, b: string): number {
  const rows: number[][] = [];
  for (let i = 0; i <= a.length; i++) {
    rows.push([i]);
    for (let j = 1; j <= b.length; j++) {
      if (i === 0) {
        rows[0]!.push(j);
        continue;
      }
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let d = Math.min(rows[i - 1]![j]! + 1, rows[i]![j - 1]! + 1, rows[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d = Math.min(d, rows[i - 2]![j - 2]! + 1);
      rows[i]!.push(d);
    }
  }
  return rows[a.length]![b.length]!;
}

/**
 * The known name `key` most likely misspells (case ignored; at most one edit per three characters, at least
 * one), or undefined when none is that close.
 */
export function closestKey(key: string, known: readonly string[]): string | undefined {
  const lower = key.toLowerCase();
  const limit = Math.max(1, Math.floor(key.length / 3));
  let best: string | undefined;
  let bestDistance = limit + 1;
  for (const name of known) {
    const d = distance(lower, name.toLowerCase());
    if (d < bestDistance) {
      best = name;
      bestDistance = d;
    }
  }
  return best;
}
