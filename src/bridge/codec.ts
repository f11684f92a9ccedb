/**
 * Bytes for bridge frames where they cross a process boundary (the process-isolated driver) or
 * go to disk. One frame on the wire:
 *
 * ```
 * ┌──────────────────────┬──────────────────────────────────────────────┐
 * │ length: uint32 (BE)  │ msgpack of { v: PROTOCOL_VERSION, frame }    │
 * └──────────────────────┴──────────────────────────────────────────────┘
 * ```
 *
 * msgpackr runs with `useRecords: false` and `structuredClone: false`, so every frame is plain,
 * self-describing msgpack any decoder can read, with no shared record state between frames.
 * {@link FrameDecoder} reassembles frames from a byte stream whose chunks split or coalesce
 * frames arbitrarily; once a frame's length prefix is in, it copies the frame's chunks straight
 * into one buffer of that size, so a large frame arriving in many chunks is copied once (a frame
 * declared over 8 MiB gets a buffer that grows with what arrives, so a peer cannot make the
 * reader hold memory it never sent).
 *
 * The same envelope carries the process driver's control messages ({@link encodeMessage}, and a
 * {@link FrameDecoder} built with that protocol's guard): one wire format, one version tag.
 * msgpackr uses its native string extractor (msgpackr-extract) when it is installed; see
 * {@link isNativeCodec}.
 * @module
 */
import { isNativeAccelerationEnabled, Packr, RESERVE_START_SPACE } from "msgpackr";
import { ChainRuntimeError } from "../kernel/index.ts";
import { FRAME_KIND, isClockFrameReadings, PROTOCOL_VERSION, type Frame, type LogLevel } from "./protocol.ts";

/** Largest frame body accepted, bytes: 64 MiB. */
export const MAX_FRAME_BYTES = 64 * 1024 * 1024;

const HEADER_BYTES = 4;
const packr = new Packr({ useRecords: false, structuredClone: false });
const LOG_LEVELS: ReadonlySet<string> = new Set<LogLevel>(["log", "info", "warn", "error", "debug"]);

/**
 * Encodes one frame with its version tag and length prefix. Throws `ChainRuntimeError`
 * `BRIDGE_FRAME_INVALID` when the body would exceed {@link MAX_FRAME_BYTES}.
 */
export function encodeFrame(frame: Frame): Uint8Array {
  return encodeMessage(frame);
}

/**
 * Encodes any msgpack-able message in the frame envelope (version tag and length prefix): the
 * process driver's control messages travel this way next to the bridge frames. Throws
 * `ChainRuntimeError` `BRIDGE_FRAME_INVALID` when the body would exceed {@link MAX_FRAME_BYTES}.
 */
export function encodeMessage(message: unknown): Uint8Array {
  // A large message gets a buffer of its own, sized to fit, before msgpackr starts: left to
  // itself, msgpackr grows its buffer to 4x what it needs at that point, and reserves 3 bytes
  // per UTF-16 unit for a string first, so a 1 MiB text meant a 4 MiB buffer and a 1 MiB string
  // a 12 MiB one, per message. Allocated memory is what drives V8's full collections here
  // (external memory): measured with 1 MiB results through the process driver, 32 -> 19
  // mark-compacts in 150 chains and 4.1-4.8 -> 3.6-4.0 ms per chain.
  const estimate = HEADER_BYTES + packedSizeBound(message, 0);
  if (estimate > PRESIZE_MIN_BYTES) packr.useBuffer(Buffer.allocUnsafeSlow(estimate + PACK_SLACK_BYTES));
  // msgpackr leaves room for the length prefix in front of the body, so the frame is never
  // copied (1 MiB: ~0.3 ms here). The result is a view on msgpackr's output buffer, which it
  // never writes over: later messages go after it or into a new buffer.
  const frame = packr.pack({ v: PROTOCOL_VERSION, frame: message }, RESERVE_START_SPACE | HEADER_BYTES);
  const bodyLength = frame.length - HEADER_BYTES;
  if (bodyLength > MAX_FRAME_BYTES) {
    throw new ChainRuntimeError("BRIDGE_FRAME_INVALID", `A bridge frame of ${bodyLength} bytes exceeds ${MAX_FRAME_BYTES}.`);
  }
  new DataView(frame.buffer, frame.byteOffset, HEADER_BYTES).setUint32(0, bodyLength, false);
  // msgpackr keeps packing into a buffer as large as the largest message so far (a new one of the
  // same size once it is full): after a large message, start over with a small one, so the host
  // does not hold that size for good (the frame just made stays valid; it is its own view).
  if (frame.buffer.byteLength > KEEP_PACK_BUFFER_BYTES) packr.useBuffer(Buffer.allocUnsafeSlow(INITIAL_PACK_BUFFER_BYTES));
  return frame;
}

/** Messages whose size bound is above this get a buffer sized to fit (see {@link encodeMessage}), bytes. */
const PRESIZE_MIN_BYTES = 64 * 1024;
/** Room msgpackr keeps free at the end of its buffer (it grows when closer than 10 bytes), and then some. */
const PACK_SLACK_BYTES = 64;
/** Deepest nesting {@link packedSizeBound} walks; below it a value counts as {@link DEEP_VALUE_BYTES}. */
const SIZE_WALK_DEPTH = 6;
const DEEP_VALUE_BYTES = 64;

/**
 * An upper bound of the msgpack size of `value` for the shapes this codec carries (strings at 3
 * bytes per UTF-16 unit, as msgpackr reserves them, byte arrays as they are, numbers 9 bytes,
 * a 5-byte header per string, array, map or byte array). Past {@link SIZE_WALK_DEPTH} levels a
 * value counts as {@link DEEP_VALUE_BYTES}: a bound for the protocol's messages (shallow), an
 * estimate for anything deeper, which msgpackr's own growth then covers.
 */
function packedSizeBound(value: unknown, depth: number): number {
  if (typeof value === "string") return 5 + value.length * 3;
  if (typeof value !== "object" || value === null) return 9;
  if (depth >= SIZE_WALK_DEPTH) return DEEP_VALUE_BYTES;
  if (value instanceof Uint8Array) return 5 + value.byteLength;
  let size = 5;
  if (Array.isArray(value)) {
    for (const item of value as unknown[]) size += packedSizeBound(item, depth + 1);
    return size;
  }
  for (const key in value) {
    if (Object.hasOwn(value, key)) size += 5 + key.length * 3 + packedSizeBound((value as Record<string, unknown>)[key], depth + 1);
  }
  return size;
}

/** Largest msgpackr buffer kept for the next message, bytes. */
const KEEP_PACK_BUFFER_BYTES = 1024 * 1024;
/** msgpackr's own first buffer size, bytes. */
const INITIAL_PACK_BUFFER_BYTES = 8192;

/**
 * Decodes exactly one length-prefixed frame. Throws `ChainRuntimeError` `BRIDGE_FRAME_INVALID`
 * when the bytes are truncated, carry trailing bytes, another version or a malformed frame.
 */
export function decodeFrame(bytes: Uint8Array): Frame {
  if (bytes.length < HEADER_BYTES) throw invalid("the frame is shorter than its length prefix");
  const length = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength).getUint32(0, false);
  if (bytes.length !== HEADER_BYTES + length) {
    throw invalid(`the length prefix says ${length} bytes but ${bytes.length - HEADER_BYTES} follow`);
  }
  return decodeBody(bytes.subarray(HEADER_BYTES));
}

/** True when msgpackr decodes strings with its native extension (msgpackr-extract). */
export function isNativeCodec(): boolean {
  return isNativeAccelerationEnabled;
}

/** Accepts a decoded envelope's payload as a message of type `T`. */
export type MessageGuard<T> = (value: unknown) => value is T;

/**
 * Reassembles frames from a byte stream; feed it chunks as they arrive. By default it accepts
 * the bridge frames ({@link isFrame}); pass another guard to read another message set in the
 * same envelope.
 */
export class FrameDecoder<T = Frame> {
  readonly #accept: MessageGuard<T>;
  /**
   * The incomplete frame at the head of the stream, copied out of the chunks once: a buffer of
   * the frame's full size once its length prefix is in (a prefix-sized one before), or, for a
   * frame declared larger than {@link PREALLOCATE_MAX_BYTES}, one that grows with what arrives.
   */
  #head: Uint8Array | undefined;
  /** Bytes of {@link #head} filled so far. */
  #filled = 0;
  /** Size of the head frame with its prefix, once the prefix is in; 0 before. */
  #total = 0;

  /** @param accept - the message guard. @defaultValue {@link isFrame} */
  constructor(accept?: MessageGuard<T>) {
    this.#accept = accept ?? (isFrame as unknown as MessageGuard<T>);
  }

  /** Bytes held waiting for the rest of a frame. */
  get pendingBytes(): number {
    return this.#filled;
  }

  /**
   * Appends `chunk` and returns every frame now complete, in order. Throws `ChainRuntimeError`
   * `BRIDGE_FRAME_INVALID` on a frame over {@link MAX_FRAME_BYTES} or a malformed body; the
   * stream cannot be resynchronised after that.
   */
  push(chunk: Uint8Array): T[] {
    const frames: T[] = [];
    let rest = chunk;
    if (this.#head !== undefined) {
      if (this.#total === 0) {
        rest = this.#fill(rest);
        if (this.#filled < HEADER_BYTES) return frames;
        this.#sizeHead(this.#head);
      }
      rest = this.#fill(rest);
      if (this.#filled < this.#total) return frames;
      const head = this.#head;
      this.#head = undefined;
      this.#filled = 0;
      this.#total = 0;
      frames.push(decodeBody(head.subarray(HEADER_BYTES), this.#accept));
    }
    while (rest.length >= HEADER_BYTES) {
      const end = HEADER_BYTES + frameLength(rest);
      if (rest.length < end) break;
      frames.push(decodeBody(rest.subarray(HEADER_BYTES, end), this.#accept));
      rest = rest.subarray(end);
    }
    if (rest.length > 0) {
      // A copy, even of a Buffer: the caller may reuse its chunk buffer.
      this.#head = new Uint8Array(HEADER_BYTES);
      this.#filled = 0;
      if (rest.length >= HEADER_BYTES) this.#sizeHead(rest);
      rest = this.#fill(rest);
    }
    return frames;
  }

  /**
   * Learns the head frame's size from its prefix (in `prefix`) and gives {@link #head} room: all
   * of it up to {@link PREALLOCATE_MAX_BYTES}; past that, room that grows with what arrives, so a
   * peer that declares 64 MiB and sends nothing more holds no more memory than it sent.
   */
  #sizeHead(prefix: Uint8Array): void {
    const total = HEADER_BYTES + frameLength(prefix);
    this.#total = total;
    const room = total <= PREALLOCATE_MAX_BYTES ? total : Math.max(this.#filled, GROWN_FIRST_BYTES);
    this.#resizeHead(room);
  }

  #resizeHead(size: number): void {
    const head = this.#head as Uint8Array;
    if (head.length === size) return;
    const grown = new Uint8Array(size);
    grown.set(head.subarray(0, this.#filled));
    this.#head = grown;
  }

  /** Copies what fits of `bytes` into the head frame, growing it up to its size; returns the rest. */
  #fill(bytes: Uint8Array): Uint8Array {
    const limit = this.#total === 0 ? HEADER_BYTES : this.#total;
    const take = Math.min(limit - this.#filled, bytes.length);
    if (this.#filled + take > (this.#head as Uint8Array).length) {
      this.#resizeHead(Math.min(limit, Math.max(this.#filled + take, 2 * (this.#head as Uint8Array).length)));
    }
    (this.#head as Uint8Array).set(take === bytes.length ? bytes : bytes.subarray(0, take), this.#filled);
    this.#filled += take;
    return bytes.subarray(take);
  }
}

/** Frames up to this size (with their prefix) get their whole buffer as soon as the prefix is in. */
const PREALLOCATE_MAX_BYTES = 8 * 1024 * 1024;
/** First room given to a larger frame; it doubles as bytes arrive. */
const GROWN_FIRST_BYTES = 1024 * 1024;

/** The body length in a frame's prefix; throws past {@link MAX_FRAME_BYTES}. */
function frameLength(bytes: Uint8Array): number {
  const length = new DataView(bytes.buffer, bytes.byteOffset, HEADER_BYTES).getUint32(0, false);
  if (length > MAX_FRAME_BYTES) throw invalid(`a frame of ${length} bytes exceeds ${MAX_FRAME_BYTES}`);
  return length;
}

function decodeBody<T = Frame>(body: Uint8Array, accept: MessageGuard<T> = isFrame as unknown as MessageGuard<T>): T {
  let decoded: unknown;
  try {
    decoded = packr.unpack(body);
  } catch (error) {
    throw invalid("the body is not msgpack", error);
  }
  if (typeof decoded !== "object" || decoded === null) throw invalid("the body is not an object");
  const { v, frame } = decoded as { v?: unknown; frame?: unknown };
  if (v !== PROTOCOL_VERSION) throw invalid(`protocol version ${String(v)} is not ${PROTOCOL_VERSION}`);
  if (!accept(frame)) throw invalid("the frame's fields do not match its kind");
  return frame;
}

/** True when `value` has the exact field types of one of the frame kinds. */
export function isFrame(value: unknown): value is Frame {
  if (typeof value !== "object" || value === null) return false;
  const frame = value as Record<string, unknown>;
  const isIndex = (field: unknown): boolean => Number.isSafeInteger(field) && (field as number) >= 0;
  switch (frame["kind"]) {
    case FRAME_KIND.call:
      return isIndex(frame["callIndex"]) && typeof frame["tool"] === "string" && typeof frame["argsJson"] === "string";
    case FRAME_KIND.result:
      return isIndex(frame["callIndex"]) && typeof frame["resultJson"] === "string";
    case FRAME_KIND.log:
      return typeof frame["level"] === "string" && LOG_LEVELS.has(frame["level"]) && typeof frame["text"] === "string";
    case FRAME_KIND.clock:
      return isClockFrameReadings(frame["readings"]);
    case FRAME_KIND.done: {
      const returnJson = frame["returnJson"];
      const error = frame["error"];
      if (returnJson !== undefined && typeof returnJson !== "string") return false;
      if (error === undefined) return true;
      if (returnJson !== undefined || typeof error !== "object" || error === null) return false;
      const { name, message, stack } = error as Record<string, unknown>;
      return typeof name === "string" && typeof message === "string" && (stack === undefined || typeof stack === "string");
    }
    default:
      return false;
  }
}

function invalid(reason: string, cause?: unknown): ChainRuntimeError {
  return new ChainRuntimeError("BRIDGE_FRAME_INVALID", `Invalid bridge frame: ${reason}.`, cause === undefined ? {} : { cause });
}
