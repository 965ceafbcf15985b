/**
 * The version of an event's payload schema on the wire (docs/wire-format.md, field `dataVersion`). The bus
 * carries it as the header `VERSION_HEADER` (src/versions.ts); an entry writes it as a field of its own (a batch
 * entry once for all its events), and the header's other entries as the `headers` they are. Decoding puts it
 * back as the header. An entry without the field is of version 1.
 */
import type { EventHeaders } from '../../src/envelope.js';
import { VERSION_HEADER } from '../../src/versions.js';

/** The entry field that holds the payload's version. */
export const DATA_VERSION_FIELD = 'dataVersion';

/** A version as the field holds it: a positive decimal integer without leading zeros. */
const VERSION = /^[1-9][0-9]{0,8}$/;

/** The version `headers` carry, or undefined (version 1). */
export function versionOf(headers: EventHeaders | undefined): string | undefined {
  return headers === undefined ? undefined : headers[VERSION_HEADER];
}

/** The last headers `headersBeside` was given, and what it returned for them (the events of a publish call share one headers object). */
let lastIn: EventHeaders | undefined;
let lastVersion: string | undefined;
let lastOut: EventHeaders | undefined;

/**
 * The headers to write beside the field holding `version`: `headers` without the version header when it is
 * `version` (undefined when nothing else is left); `headers` as they are otherwise (another version, kept with
 * the event).
 */
export function headersBeside(headers: EventHeaders | undefined, version: string | undefined): EventHeaders | undefined {
  if (headers === undefined || version === undefined || headers[VERSION_HEADER] !== version) return headers;
  if (headers === lastIn && version === lastVersion) return lastOut;
  const { [VERSION_HEADER]: _version, ...rest } = headers;
  lastIn = headers;
  lastVersion = version;
  lastOut = Object.keys(rest).length > 0 ? rest : undefined;
  return lastOut;
}

/** Whether `text` is a version the field may hold. */
export function isDataVersion(text: string): boolean {
  return VERSION.test(text);
}

/** The headers of a decoded event of `version` (from the field): `headers` with the version header, unless they name one of their own. */
export function withVersion(headers: EventHeaders | undefined, version: string): EventHeaders {
  if (headers === undefined) return { [VERSION_HEADER]: version };
  return headers[VERSION_HEADER] !== undefined ? headers : { ...headers, [VERSION_HEADER]: version };
}
