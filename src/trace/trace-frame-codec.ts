/**
 * The on-disk record format of a trace log.
 *
 *     ┌──────────────────────┬──────────────────────────────┐
 *     │ length: uint32 BE    │ payload: msgpack of one event │   × N, appended, never rewritten
 *     └──────────────────────┴──────────────────────────────┘
 *
 * Invariants:
 * - One frame per event; the payload is msgpackr with `useRecords: false` (plain maps, no shared
 *   structures), so each frame decodes on its own and a file can be read by any msgpack reader.
 * - A crash can only leave a partial frame at the end (appends are sequential). The decoder
 *   stops at the first frame that runs past the end of the bytes, or, when it is the last one,
 *   whose payload does not decode and is a record's start followed by zeros: that tail is "torn"
 *   and reported, not thrown. So is a tail of zero bytes (what some file systems leave of a
 *   write cut short by a power loss). A last frame whose bytes are all there and are not that
 *   is damaged: `TRACE_INVALID` (dropped, the call it logs would run again on a resume).
 * - A frame that runs past the end is torn only if what is there of it could be the start of a
 *   record: a msgpack map (every event is one) or an escaped frame (below) that is not complete.
 *   A damaged length prefix in the middle of a log also runs past the end, but the bytes after
 *   it are a whole record and more: that is corruption, `TRACE_INVALID`, never a tail to ignore
 *   (a writer would cut the records after it off, and a resume would run them again).
 * - A frame that fails to decode with more frames after it is corruption: `TRACE_INVALID`.
 * - Maps decode as `Map`s and become plain objects here, a `__proto__` key as an own data
 *   property: a hostile file cannot pollute prototypes, and a tool result that really had a
 *   `__proto__` key replays as it was (msgpackr's own object decoding renames it `__proto_`).
 * - Every string decodes as it was, lone surrogates included. A JS string may hold half of a
 *   UTF-16 pair alone (`"a\uD800b"`: a tool may return one, and the script sees it), which the
 *   UTF-8 of a msgpack string cannot: msgpackr writes U+FFFD for it, and a replay or a resume
 *   would hand the script other text than the run saw. So an event holding one, in a value or a
 *   key at any depth, is written as an *escaped frame*:
 *
 *       payload: msgpack array [ "isochain:escaped-strings", event' ]
 *
 *   `event'` is the event with every string that is not well-formed, or that begins with `"`,
 *   written as its JSON text (`JSON.stringify` writes a lone surrogate as `\udXXX`), and every
 *   other string as it is; the reader takes each string of it that begins with `"` back through
 *   `JSON.parse`. Every other event is written as its map, byte for byte as before: telling
 *   which costs the writer one walk over the event (`String.prototype.isWellFormed` on each
 *   string) and the reader one `Array.isArray` per frame. The decoded events are the same, so the
 *   format version is too: a log without an escaped frame reads the same in every reader of
 *   version 2, and a reader older than escaped frames refuses one as an event it does not know
 *   (`TRACE_INVALID`), never misreads it. What msgpackr writes in extensions of its own or as
 *   bytes (dates, sets, errors, regular expressions, byte arrays) is left to it: none of it is
 *   the JSON a trace records.
 *
 * @module
 */
import { Packr, Unpackr } from "msgpackr";
import { ChainRuntimeError } from "../kernel/index.ts";
import type { TraceEvent } from "./trace-event.ts";

// 64-bit integers decode as numbers: a trace holds JSON data, and a BigInt in a hand-made file
// would reach code (a table, a JSON export) that cannot print it.
// No structured clone (msgpackr's default): a file cannot make a value that holds itself.
const packr = new Packr({ useRecords: false, mapsAsObjects: true, int64AsType: "number", structuredClone: false });
/**
 * The same encoding, with map headers sized to each object: needed for an object of 65 536 keys
 * or more (valid JSON a tool may return, or a script pass), which the fast 16-bit map header of
 * `packr` cannot hold. It encodes 5-10% slower, so it is only the fallback.
 */
const widePackr = new Packr({ useRecords: false, mapsAsObjects: true, int64AsType: "number", variableMapSize: true });
const unpackr = new Unpackr({ useRecords: false, mapsAsObjects: false, int64AsType: "number", structuredClone: false });
/** The UTF-8 bytes of `__proto__`, whatever msgpack string header precedes them. */
const PROTO_KEY = Buffer.from("__proto__");
/** First item of an escaped frame's payload (see the module comment). */
const ESCAPED_FRAME_TAG = "isochain:escaped-strings";
/** `"`: an escaped frame's strings that begin with it are JSON text. */
const QUOTE = 0x22;

/** Bytes of a frame's length prefix. */
export const TRACE_FRAME_HEADER_BYTES = 4;

const MAX_PAYLOAD_BYTES = 0xffff_ffff;

/**
 * Encodes one event as a length-prefixed frame, in a fresh buffer the caller owns.
 * Values msgpack cannot hold are dropped the way msgpackr drops them (functions become `undefined`).
 *
 * @throws ChainRuntimeError `STORE_FAILED` when the event cannot be encoded or exceeds 4 GiB.
 */
export function encodeTraceFrame(event: TraceEvent): Buffer {
  let payload: Buffer;
  try {
    payload = packEvent(event);
  } catch (cause) {
    throw new ChainRuntimeError("STORE_FAILED", `Could not encode a ${event.type} trace event.`, {
      cause,
      details: { type: event.type },
    });
  }
  if (payload.length > MAX_PAYLOAD_BYTES) {
    throw new ChainRuntimeError("STORE_FAILED", `A ${event.type} trace event is too large to store.`, {
      details: { type: event.type, bytes: payload.length },
    });
  }
  const frame = Buffer.allocUnsafe(TRACE_FRAME_HEADER_BYTES + payload.length);
  frame.writeUInt32BE(payload.length, 0);
  payload.copy(frame, TRACE_FRAME_HEADER_BYTES);
  return frame;
}

/**
 * Packs `event` as its map, or as an escaped frame when it holds a string UTF-8 cannot carry (see
 * the module comment). Inside {@link encodeTraceFrame}'s `try`: a value nested past the stack
 * fails here as it would in msgpackr, as `STORE_FAILED`.
 */
function packEvent(event: TraceEvent): Buffer {
  return holdsLoneSurrogate(event) ? packWide([ESCAPED_FRAME_TAG, escapeStrings(event)]) : packWide(event);
}

/**
 * Packs with the fast encoder, or with {@link widePackr} when an object has too many keys for it,
 * or, when that fails too, with every plain object as a `Map` (see {@link asMaps}).
 */
function packWide(value: unknown): Buffer {
  try {
    return packr.pack(value);
  } catch {
    // msgpackr says which option it needs in its message; any failure gets the second try.
    try {
      return widePackr.pack(value);
    } catch {
      return widePackr.pack(asMaps(value));
    }
  }
}

/**
 * `value` with every plain object (and array) copied, each object as a `Map` of its own keys:
 * msgpackr writes a Map as the same msgpack map, which decodes to the same plain object, but
 * reads no key of it as its own protocol. A plain object whose `constructor` and `toJSON` keys
 * are data (`{"constructor":1,"toJSON":1}`, valid JSON a tool may return or a script pass) makes
 * msgpackr call `toJSON` and throw; as a Map it is written as it is. Only on that failure: it costs
 * a copy.
 */
function asMaps(value: unknown): unknown {
  if (typeof value !== "object" || value === null) return value;
  if (Array.isArray(value)) return value.map(asMaps);
  const prototype: unknown = Object.getPrototypeOf(value);
  if (prototype !== Object.prototype && prototype !== null) return value;
  return new Map(Object.keys(value).map((key) => [key, asMaps((value as Record<string, unknown>)[key])]));
}

/**
 * True when a string in `value`, a key or a value at any depth, is not well-formed UTF-16 (it
 * holds a lone surrogate). Walks what msgpackr writes (see {@link packedForm}).
 */
function holdsLoneSurrogate(value: unknown): boolean {
  if (typeof value === "string") return !value.isWellFormed();
  if (typeof value !== "object" || value === null) return false;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) if (holdsLoneSurrogate(value[i])) return true;
    return false;
  }
  // A plain object is taken as it is, as msgpackr takes it: what nearly every event holds.
  const form = value.constructor === Object ? value : packedForm(value);
  if (form === LEFT_TO_MSGPACKR) return false;
  if (form !== value) return holdsLoneSurrogate(form);
  if (value.constructor === Map) {
    for (const [key, item] of value as Map<unknown, unknown>) if (holdsLoneSurrogate(key) || holdsLoneSurrogate(item)) return true;
    return false;
  }
  for (const key in value) {
    if (Object.hasOwn(value, key) && (!key.isWellFormed() || holdsLoneSurrogate((value as Record<string, unknown>)[key]))) return true;
  }
  return false;
}

/**
 * `value` as an escaped frame holds it: a copy in which every string that is not well-formed or
 * begins with `"` is its JSON text, keys included, and which msgpackr writes as it would write
 * `value` otherwise (see {@link packedForm}).
 */
function escapeStrings(value: unknown): unknown {
  if (typeof value === "string") return escapeString(value);
  if (typeof value !== "object" || value === null) return value;
  if (Array.isArray(value)) return Array.from(value, escapeStrings);
  const form = value.constructor === Object ? value : packedForm(value);
  if (form === LEFT_TO_MSGPACKR) return value;
  if (form !== value) return escapeStrings(form);
  if (value.constructor === Map) return new Map(Array.from(value as Map<unknown, unknown>, ([key, item]) => [escapeStrings(key), escapeStrings(item)]));
  const escaped: Record<string, unknown> = {};
  for (const key in value) {
    if (Object.hasOwn(value, key)) setOwn(escaped, escapeString(key), escapeStrings((value as Record<string, unknown>)[key]));
  }
  return escaped;
}

function escapeString(text: string): string {
  return text.charCodeAt(0) === QUOTE || !text.isWellFormed() ? JSON.stringify(text) : text;
}

/** {@link packedForm} of what msgpackr writes in an extension of its own or as bytes. */
const LEFT_TO_MSGPACKR = Symbol("left to msgpackr");

/**
 * What msgpackr writes for `value`, an object not made by `{}` (its `constructor` is not
 * `Object`), as the walks above take it: `value` itself for a `Map` (its entries), what
 * `toJSON` returns when it has one (a plain object's `toJSON` key is data to msgpackr),
 * {@link LEFT_TO_MSGPACKR} for what it writes in an extension of its own or as bytes (see the
 * module comment), else `value` itself (a map of its own enumerable keys).
 */
function packedForm(value: object): unknown {
  if (value.constructor === Map) return value;
  if (ArrayBuffer.isView(value) || value instanceof ArrayBuffer || value instanceof Date) return LEFT_TO_MSGPACKR;
  if (value instanceof Set || value instanceof Error || value instanceof RegExp) return LEFT_TO_MSGPACKR;
  const toJSON = (value as { toJSON?: unknown }).toJSON;
  return typeof toJSON === "function" ? (toJSON.call(value) as unknown) : value;
}

/** What {@link decodeTraceFrames} found. */
export interface DecodedTraceFrames {
  /** The decoded payloads, in order. Shape is not checked here: `foldTraceEvents` does that. */
  readonly events: readonly TraceEvent[];
  /** Bytes of whole, decodable frames from the start: where the next append belongs. */
  readonly validBytes: number;
  /** Bytes of a partial final frame that were ignored (0 for a clean log). */
  readonly tornBytes: number;
}

/**
 * Decodes a log of frames, ignoring a torn final frame.
 *
 * @throws ChainRuntimeError `TRACE_INVALID` when a frame that is followed by more bytes does not decode.
 */
export function decodeTraceFrames(bytes: Uint8Array): DecodedTraceFrames {
  const buffer = Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const events: TraceEvent[] = [];
  let offset = 0;
  while (offset < buffer.length) {
    if (offset + TRACE_FRAME_HEADER_BYTES > buffer.length) break;
    const length = buffer.readUInt32BE(offset);
    const end = offset + TRACE_FRAME_HEADER_BYTES + length;
    if (end > buffer.length) {
      if (isZeros(buffer, offset) || isPartialRecord(buffer.subarray(offset + TRACE_FRAME_HEADER_BYTES))) break;
      throw new ChainRuntimeError(
        "TRACE_INVALID",
        `Trace frame ${events.length} at byte ${offset} claims ${length} bytes, past the end of the log, but is not a record cut short by a crash: ` +
          `the log is damaged there (or is not a trace).`,
        { details: { frame: events.length, offset, length } },
      );
    }
    if (length === 0 && isZeros(buffer, offset)) break;
    let event: TraceEvent;
    try {
      if (length === 0) throw new Error("empty frame");
      const payload = buffer.subarray(offset + TRACE_FRAME_HEADER_BYTES, end);
      // Maps decode as Maps (and are converted) only in a frame that holds a `__proto__` key:
      // msgpackr's own object decoding is twice as fast and renames that key.
      const decoded: unknown = payload.includes(PROTO_KEY) ? plainData(unpackr.unpack(payload)) : packr.unpack(payload);
      event = (isEscapedFrame(decoded) ? unescapeStrings(decoded[1]) : decoded) as TraceEvent;
    } catch (cause) {
      // The last frame, torn by a crash mid-write: what is there of it is a record's start, and
      // the rest zeros (a file system that grew the file before the data landed). A last frame
      // whose bytes are all there but do not decode is damaged: read as torn, the call it logs
      // would vanish and a resume would run it again.
      if (end === buffer.length && isTornPayload(buffer.subarray(offset + TRACE_FRAME_HEADER_BYTES, end))) break;
      const where = end === buffer.length ? "the last frame, whole but damaged (not a write cut short)" : "followed by more frames";
      throw new ChainRuntimeError("TRACE_INVALID", `Trace frame ${events.length} at byte ${offset} does not decode: ${where}. The log is damaged there.`, {
        cause,
        details: { frame: events.length, offset },
      });
    }
    if (holdsBigInt(event, 0)) {
      throw new ChainRuntimeError(
        "TRACE_INVALID",
        `Trace frame ${events.length} at byte ${offset} holds a BigInt, which no writer logs: the log is damaged there (or was not written by isochain).`,
        { details: { frame: events.length, offset } },
      );
    }
    events.push(event);
    offset = end;
  }
  return { events, validBytes: offset, tornBytes: buffer.length - offset };
}

/**
 * True when a decoded event holds a BigInt, which no writer logs (the writer refuses integers
 * past 64 bits, and reads 64-bit ones as numbers) and the code that reads a trace cannot print
 * (a JSON export, a replay's diff): msgpackr's extension for large integers, or a typed array of
 * them. Nesting is not bounded here: a writer logs a caller's raw arguments however deep, and the
 * readers bound their own walks (and catch what they cannot write). Looks
 * {@link MAX_BIGINT_WALK_DEPTH} levels deep at most, so it never runs out of stack.
 */
function holdsBigInt(value: unknown, depth: number): boolean {
  if (typeof value === "bigint") return true;
  if (typeof value !== "object" || value === null || depth > MAX_BIGINT_WALK_DEPTH) return false;
  if (ArrayBuffer.isView(value)) return value instanceof BigInt64Array || value instanceof BigUint64Array;
  const items = Array.isArray(value) ? value : value instanceof Map || value instanceof Set ? [...value.values()] : Object.values(value);
  for (const item of items) if (holdsBigInt(item, depth + 1)) return true;
  return false;
}

/** Deepest level {@link holdsBigInt} looks at: far below the stack's depth, past any value a chain records. */
const MAX_BIGINT_WALK_DEPTH = 1000;

/**
 * True when `payload`, the bytes left after a frame header that runs past the end, could be a
 * record cut short: nothing yet, or the start of a msgpack map (an event) or of an array of two
 * (an escaped frame) that does not decode for lack of bytes (msgpackr marks that `incomplete`).
 * A whole value there, or any other byte first, means the length prefix is wrong.
 */
function isPartialRecord(payload: Buffer): boolean {
  const first = payload[0];
  if (first === undefined) return true;
  if (!((first >= 0x80 && first <= 0x8f) || first === 0xde || first === 0xdf || first === 0x92)) return false;
  try {
    unpackr.unpack(payload);
    return false;
  } catch (error) {
    return (error as { incomplete?: unknown }).incomplete === true;
  }
}

/**
 * True when `payload`, a last frame's that does not decode though all its bytes are there, is a
 * record's start followed by zeros (at least one): the only way a write cut short leaves a frame
 * of its whole length.
 */
function isTornPayload(payload: Buffer): boolean {
  let end = payload.length;
  while (end > 0 && payload[end - 1] === 0) end--;
  return end < payload.length && isPartialRecord(payload.subarray(0, end));
}

/** True when every byte of `buffer` from `offset` on is zero. */
function isZeros(buffer: Buffer, offset: number): boolean {
  for (let i = offset; i < buffer.length; i++) if (buffer[i] !== 0) return false;
  return true;
}

/** `value` with every `Map` turned into a plain object (keys as strings; `__proto__` an own property). */
function plainData(value: unknown): unknown {
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) value[i] = plainData(value[i]);
    return value;
  }
  if (!(value instanceof Map)) return value;
  const object: Record<string, unknown> = {};
  for (const [key, item] of value) {
    const name = String(key);
    setOwn(object, name, plainData(item));
  }
  return object;
}

/** True when `decoded` is the payload of an escaped frame: `[ESCAPED_FRAME_TAG, event']`. */
function isEscapedFrame(decoded: unknown): decoded is [string, unknown] {
  return Array.isArray(decoded) && decoded.length === 2 && decoded[0] === ESCAPED_FRAME_TAG;
}

/**
 * `value`, decoded from an escaped frame, with every string that begins with `"` (keys
 * included) taken back from its JSON text: arrays are changed in place, plain objects rebuilt
 * (their keys may change), anything else (bytes, dates) is left as decoded.
 *
 * @throws SyntaxError when such a string is not JSON text (a damaged or hand-made frame).
 */
function unescapeStrings(value: unknown): unknown {
  if (typeof value === "string") return unescapeString(value);
  if (typeof value !== "object" || value === null) return value;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) value[i] = unescapeStrings(value[i]);
    return value;
  }
  const prototype: unknown = Object.getPrototypeOf(value);
  if (prototype !== Object.prototype && prototype !== null) return value;
  const object: Record<string, unknown> = {};
  for (const key of Object.keys(value)) setOwn(object, unescapeString(key), unescapeStrings((value as Record<string, unknown>)[key]));
  return object;
}

function unescapeString(text: string): string {
  // JSON text that begins with `"` is a string, or does not parse.
  return text.charCodeAt(0) === QUOTE ? (JSON.parse(text) as string) : text;
}

/** Sets `object[key]` as an own data property, a `__proto__` key too (assigning it would set the prototype). */
function setOwn(object: Record<string, unknown>, key: string, value: unknown): void {
  if (key === "__proto__") defineProperty(object, key, { value, writable: true, enumerable: true, configurable: true });
  else object[key] = value;
}

const defineProperty = Object.defineProperty;
