/**
 * New empty arrays for the hot paths, made so that V8 keeps one shape for them.
 */

/**
 * A new empty array not made by a literal. V8 tracks where literals are made and, once most from one site
 * outlived a scavenge (as batches do with 10,000 concurrent publishers), allocates that site's later ones in
 * the old generation. A dead one there, uncollected until a full GC, keeps every event it held alive through
 * each scavenge, so every event is promoted and each scavenge grows with them. Copies
 * of an empty array (`slice`) and class instances are never allocated that way.
 */
export function emptyArray<T>(): T[] {
  return (NO_ITEMS as T[]).slice();
}
const NO_ITEMS: unknown[] = [];

/**
 * A new empty array that holds objects from the start. An empty array starts as one of small integers and
 * turns into one of objects at its first push; code optimized while the arrays it met had turned already
 * would give up ("wrong map") at the first push into a new one: a publishMany call's unit list, the batcher's
 * queue of a new bus. Elements kinds never go back: a copy of `[null]` cut to length 0 stays one of objects.
 */
export function emptyObjectArray<T>(): T[] {
  const a = OBJECTS.slice() as T[];
  a.length = 0;
  return a;
}
const OBJECTS: unknown[] = [null];
