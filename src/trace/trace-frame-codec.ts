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
 *   stops at the first frame that runs past the end of the bytes, or whose payload does not
 *   decode when it is the last one: that tail is "torn" and reported, not thrown. So is a tail of
 *   zero bytes (what some file systems leave of a write cut short by a power loss).
 * - A frame that runs past the end is torn only if what is there of it could be the start of a
 *   record: a msgpack map (every event is one) that is not complete. A damaged length prefix
 *   in the middle of a log also runs past the end, but the bytes after it are a whole record
 *   and more: that is corruption, `TRACE_INVALID`, never a tail to ignore (a writer would cut
 *   the records after it off, and a resume would run them again).
 * - A frame that fails to decode with more frames after it is corruption: `TRACE_INVALID`.
 * - Maps decode as `Map`s and become plain objects here, a `__proto__` key as an own data
 *   property: a hostile file cannot pollute prototypes, and a tool result that really had a
 *   `__proto__` key replays as it was (msgpackr's own object decoding renames it `__proto_`).
 *
 * @module
 */
import { Packr, Unpackr } from "msgpackr";
import { ChainRuntimeError } from "../kernel/index.ts";
import type { TraceEvent } from "./trace-event.ts";

// 64-bit integers decode as numbers: a trace holds JSON data, and a BigInt in a hand-made file
// would reach code (a table, a JSON export) that cannot print it.
const packr = new Packr({ useRecords: false, mapsAsObjects: true, int64AsType: "number" });
/**
 * The same encoding, with map headers sized to each object: needed for an object of 65 536 keys
 * or more (valid JSON a tool may return, or a script pass), which the fast 16-bit map header of
 * `packr` cannot hold. It encodes 5-10% slower, so it is only the fallback.
 */
const widePackr = new Packr({ useRecords: false, mapsAsObjects: true, int64AsType: "number", variableMapSize: true });
const unpackr = new Unpackr({ useRecords: false, mapsAsObjects: false, int64AsType: "number" });
/** The UTF-8 bytes of `__proto__`, whatever msgpack string header precedes them. */
const PROTO_KEY = Buffer.from("__proto__");

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
    payload = packWide(event);
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

/** Packs with the fast encoder, or with {@link widePackr} when an object has too many keys for it. */
function packWide(event: TraceEvent): Buffer {
  try {
    return packr.pack(event);
  } catch {
    // msgpackr says which option it needs in its message; any failure gets the second try.
    return widePackr.pack(event);
  }
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
      event = (payload.includes(PROTO_KEY) ? plainData(unpackr.unpack(payload)) : packr.unpack(payload)) as TraceEvent;
    } catch (cause) {
      if (end === buffer.length) break; // the last frame: torn by a crash mid-write
      throw new ChainRuntimeError("TRACE_INVALID", `Trace frame ${events.length} at byte ${offset} does not decode.`, {
        cause,
        details: { frame: events.length, offset },
      });
    }
    events.push(event);
    offset = end;
  }
  return { events, validBytes: offset, tornBytes: buffer.length - offset };
}

/**
 * True when `payload`, the bytes left after a frame header that runs past the end, could be a
 * record cut short: nothing yet, or the start of a msgpack map that does not decode for lack of
 * bytes (msgpackr marks that `incomplete`). A whole value there, or any other byte first, means
 * the length prefix is wrong.
 */
function isPartialRecord(payload: Buffer): boolean {
  const first = payload[0];
  if (first === undefined) return true;
  if (!((first >= 0x80 && first <= 0x8f) || first === 0xde || first === 0xdf)) return false;
  try {
    unpackr.unpack(payload);
    return false;
  } catch (error) {
    return (error as { incomplete?: unknown }).incomplete === true;
  }
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
    if (name === "__proto__") defineProperty(object, name, { value: plainData(item), writable: true, enumerable: true, configurable: true });
    else object[name] = plainData(item);
  }
  return object;
}

const defineProperty = Object.defineProperty;
