/**
 * The consumer-side check a handler gets, wherever it runs (the bus wraps handler functions with it; native
 * worker threads wrap handler modules; `bus.deadLetters` checks stored events with it): the version gate, the
 * upcasting of older versions of a versioned type (src/versions.ts), and the schema check of
 * src/schema-check.ts when `validateOnConsume` is on.
 *
 * The version of an event is its `VERSION_HEADER` (absent: 1). A plain type knows version 1; a versioned type
 * knows 1..latest. An event of a version the consumer does not know fails with a non-retryable
 * `ValidationError` naming both versions (it is dead-lettered, and can be replayed to an upgraded consumer).
 */
import type { EventEnvelope } from './envelope.js';
import { NonRetryableError, ValidationError } from './errors.js';
import type { EventMap } from './events.js';
import { checkedData, checkedType, invalidAlways, type CheckedType } from './schema-check.js';
import { compileValidator } from './validator.js';
import { VERSION_HEADER, versionsOf, type EventVersions } from './versions.js';

/** What the check does to an event: replaces `event.data` (and, after an upcast, the version header), or throws. */
export type ConsumeCheck = (event: EventEnvelope) => void;

/**
 * The consumer-side check of event type `name`, or undefined when there is nothing to check. `validate` is the
 * application's `validateOnConsume`: with it, payloads of the latest version are checked against its schema
 * (not for a schema that transforms values: its events carry its output, which it cannot check again as input),
 * and a plain type's events of another version are refused. A versioned type's events of older versions are
 * always checked against their own version and upcast, so that handlers get the latest shape.
 */
export function consumeCheck(events: EventMap, name: string, validate = true): ConsumeCheck | undefined {
  const versions = versionsOf(events.schemas[name]);
  const checkLatest = validate && !events.transforming.has(name);
  if (versions !== undefined) return upcastingCheck(checkedType(events, name), versions, checkLatest);
  if (!validate) return undefined;
  if (!checkLatest) return (event) => void versionOf(event, name, 1);
  const t = checkedType(events, name);
  return (event) => {
    if (event.headers !== undefined) versionOf(event, name, 1);
    (event as { data: unknown }).data = checkedData(t, event.data, -1, event.id);
  };
}

/**
 * The check of a versioned type: a payload of the latest version is checked (when `checkLatest`) against `latest`
 * (the schema the event map holds); an older one against each version from its own, upcast between them.
 */
function upcastingCheck(latest: CheckedType, versions: EventVersions, checkLatest: boolean): ConsumeCheck {
  const n = versions.schemas.length;
  // Older versions only: version i + 1 is `older[i]`.
  const older: CheckedType[] = versions.schemas.slice(0, n - 1).map((schema, i) => ({ name: `${latest.name}" version "${i + 1}`, schema, validate: compileValidator(schema) ?? invalidAlways }));
  const header = String(n);
  return (event) => {
    const version = versionOf(event, latest.name, n);
    if (version === n) {
      if (checkLatest) (event as { data: unknown }).data = checkedData(latest, event.data, -1, event.id);
      return;
    }
    const data = upcast(latest, older, versions.ups, version, event);
    const e = event as { data: unknown; headers?: Record<string, string> };
    e.data = data;
    // The header names the version of the payload beside it: a dead letter or a replay of this envelope is of the latest version.
    e.headers = { ...event.headers, [VERSION_HEADER]: header };
  };
}

/** `event.data`, of version `from` (below the latest), checked against each version and upcast to the latest's output. */
function upcast(latest: CheckedType, older: readonly CheckedType[], ups: EventVersions['ups'], from: number, event: EventEnvelope): unknown {
  let data = event.data;
  for (let v = from; v <= older.length; v++) {
    const parsed = checkedData(older[v - 1]!, data, -1, event.id);
    try {
      data = ups[v - 1]!(parsed);
    } catch (err) {
      throw new NonRetryableError(`Upcasting event ${event.id} of "${latest.name}" from version ${v} to ${v + 1} failed: ${(err as Error)?.message ?? String(err)}`, { cause: err });
    }
  }
  return checkedData(latest, data, -1, event.id);
}

/** The version of `event` (its header, absent: 1); a ValidationError when it is not one of 1..`known`. */
function versionOf(event: EventEnvelope, name: string, known: number): number {
  const raw = event.headers?.[VERSION_HEADER];
  if (raw === undefined) return 1;
  const version = Number(raw);
  if (Number.isInteger(version) && version >= 1 && version <= known && String(version) === raw) return version;
  const what = /^[1-9][0-9]{0,8}$/.test(raw) ? `version ${raw}` : `of version "${raw}" (not a positive integer)`;
  const knows = known === 1 ? 'version 1' : `versions 1..${known}`;
  const message = `event ${name} is ${what}; this consumer knows ${knows} (event ${event.id})`;
  throw new ValidationError(message, [{ path: [], message, code: 'custom' }]);
}
