/**
 * What the bus compiles once per event type when it is made (`TypeState`): the schema's validator, JSON
 * encoder, size bound and estimate, checking writer, and one write lane per partition the transport reports;
 * and the steps that run those plans on a payload: `validated` (the compiled validator, with zod deciding
 * whatever it rejects, on the publish and the consume side) and `encodeJson`. A `TypeState` is shared by the
 * publish paths, the subscriptions and the dead-letter check; only its round-robin cursor and shared meta change
 * after it is built.
 */
import type { z } from 'zod';
import { Lane } from './batch-units.js';
import { compileCheckedWriter } from './checked-writer.js';
import { ConfigError, SerializationError } from './errors.js';
import type { EventMap } from './events.js';
import { compileJsonWriter, type JsonWriter } from './json-writer.js';
import { EventMeta } from './outgoing.js';
import { compileSizeBound, compileSizeEstimate, type Serializer } from './serializer.js';
import type { Transport } from './transport.js';
import { compileValidator, type Validator } from './validator.js';
import { checkedData, invalidAlways } from './schema-check.js';
import { latestVersion } from './versions.js';

export interface TypeState {
  readonly name: string;
  readonly schema: z.ZodType;
  /** Schema-compiled validator (zod decides whatever it returns INVALID for). */
  readonly validate: Validator;
  /** Schema-compiled JSON encoder, or JSON.stringify for schemas it cannot prove. */
  readonly serialize: Serializer;
  /** Compiled upper bound of the encoded size, when the transport encodes later and has a limit. */
  readonly sizeBound: ((value: unknown) => number) | undefined;
  /** Compiled estimate of the encoded size, counted toward `batching.maxBytes` when not encoded at publish. */
  readonly sizeEstimate: ((value: unknown) => number) | undefined;
  /** Partitions the type is routed over; only ever raised (`raisePartitions`). */
  partitions: number;
  /** One write lane per partition. */
  readonly lanes: Lane[];
  /** The transport's probe of waiting consumers for the type's lanes (`Transport.sendNowProbe`). */
  readonly sendNow: ((partition: number) => boolean) | undefined;
  readonly encode: boolean;
  /**
   * For a transport that takes runs as bytes (`capabilities.input` `runBytes`): the schema's checking writer (checks
   * and writes a payload in one pass, `compileCheckedWriter`) and its JSON writer (for zod's output where the
   * checking writer is unsure), with which `publishMany` writes payloads as bytes at publish; undefined when
   * either is missing.
   */
  readonly bytes: { readonly check: JsonWriter; readonly writer: JsonWriter } | undefined;
  rr: number;
  /** The latest version as the header's string, for a versioned type (its events carry it); undefined for a plain type. */
  readonly version: string | undefined;
  /** What single `publish()` calls without options share while the clock stays on one millisecond. */
  meta: EventMeta;
}

/**
 * The plans of every type of `events`, in `events.names` order. `runBytes`: the transport takes runs as bytes
 * (each type then gets its writers, `TypeState.bytes`). Throws a ConfigError when the transport reports a
 * partition count that is not a positive integer.
 */
export function compileTypeStates(events: EventMap, transport: Transport, serializers: Map<string, Serializer>, runBytes: boolean): Map<string, TypeState> {
  const types = new Map<string, TypeState>();
  for (const name of events.names) types.set(name, compileTypeState(events, transport, serializers, runBytes, name));
  return types;
}

function compileTypeState(events: EventMap, transport: Transport, serializers: Map<string, Serializer>, runBytes: boolean, name: string): TypeState {
  const caps = transport.capabilities;
  const limited = caps.maxEventBytes < Number.MAX_SAFE_INTEGER;
  const partitions = transport.partitionsFor(name);
  if (!Number.isInteger(partitions) || partitions < 1) {
    throw new ConfigError(`Transport "${transport.type}" reported ${partitions} partitions for "${name}".`);
  }
  const sendNow = transport.sendNowProbe?.(name);
  const lanes = Array.from({ length: partitions }, (_, p) => new Lane(name, p, sendNow));
  const schema = events.schemas[name]!;
  const version = versionHeader(schema);
  const eager = caps.encoding === 'json' || events.needsEncodeCheck.has(name);
  const sizeBound = !eager && limited ? compileSizeBound(schema) : undefined;
  const check = runBytes ? compileCheckedWriter(schema) : undefined;
  const writer = check !== undefined ? compileJsonWriter(schema) : undefined;
  const bytes = check !== undefined && writer !== undefined ? { check, writer } : undefined;
  return {
    name,
    schema,
    validate: compileValidator(schema) ?? invalidAlways,
    serialize: serializers.get(name)!,
    sizeBound,
    sizeEstimate: eager ? undefined : compileSizeEstimate(schema),
    partitions,
    lanes,
    sendNow,
    // Encode at publish when the transport wants JSON, when only encoding proves the payload
    // encodable, or when a size limit must be checked and no compiled bound exists.
    encode: eager || (limited && sizeBound === undefined),
    bytes,
    rr: 0,
    version,
    meta: new EventMeta(name, 0, undefined, version),
  };
}

/** The latest version as the header's string for a versioned schema (src/versions.ts); undefined for a plain one. */
function versionHeader(schema: z.ZodType): string | undefined {
  const latest = latestVersion(schema);
  return latest > 1 ? String(latest) : undefined;
}

/**
 * The transport raised the type's partition count to `partitions`: a lane for each new partition, and events
 * published from here on are routed over the new count. A count not above the current one changes nothing.
 */
export function raisePartitions(t: TypeState, partitions: number): void {
  if (!Number.isInteger(partitions) || partitions <= t.partitions) return;
  for (let p = t.lanes.length; p < partitions; p++) t.lanes.push(new Lane(t.name, p, t.sendNow));
  t.partitions = partitions;
}

/** The parsed output of `data`, or a ValidationError (src/schema-check.ts: publish and consume share it). */
export const validated: (t: TypeState, data: unknown, index: number, eventId: string | undefined) => unknown = checkedData;

/** The payload's JSON by the type's encoder; a SerializationError when it cannot be encoded or encodes to nothing. */
export function encodeJson(t: TypeState, value: unknown): string {
  let json: string | undefined;
  try {
    json = t.serialize(value);
  } catch (err) {
    throw new SerializationError(`Payload of "${t.name}" cannot be encoded as JSON: ${(err as Error).message}`, { cause: err });
  }
  if (json === undefined) throw new SerializationError(`Payload of "${t.name}" encodes to nothing (undefined, a function or a symbol).`);
  return json;
}
