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
 * frames arbitrarily; it keeps the chunks of an incomplete frame in a list and joins them once,
 * so a large frame arriving in many chunks is copied once, not once per chunk.
 *
 * The same envelope carries the process driver's control messages ({@link encodeMessage}, and a
 * {@link FrameDecoder} built with that protocol's guard): one wire format, one version tag.
 * msgpackr uses its native string extractor (msgpackr-extract) when it is installed; see
 * {@link isNativeCodec}.
 * @module
 */
import { isNativeAccelerationEnabled, Packr } from "msgpackr";
import { ChainRuntimeError } from "../kernel/index.ts";
import { FRAME_KIND, PROTOCOL_VERSION, type Frame, type LogLevel } from "./protocol.ts";

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
  const body = packr.pack({ v: PROTOCOL_VERSION, frame: message });
  if (body.length > MAX_FRAME_BYTES) {
    throw new ChainRuntimeError("BRIDGE_FRAME_INVALID", `A bridge frame of ${body.length} bytes exceeds ${MAX_FRAME_BYTES}.`);
  }
  const out = new Uint8Array(HEADER_BYTES + body.length);
  new DataView(out.buffer).setUint32(0, body.length, false);
  out.set(body, HEADER_BYTES);
  return out;
}

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
  /** Copies of the chunks of the incomplete frame at the head of the stream. */
  #chunks: Uint8Array[] = [];
  #held = 0;
  /** Bytes needed before the head frame can be decoded (4 while its length is unknown). */
  #needed = HEADER_BYTES;

  /** @param accept - the message guard. @defaultValue {@link isFrame} */
  constructor(accept?: MessageGuard<T>) {
    this.#accept = accept ?? (isFrame as unknown as MessageGuard<T>);
  }

  /** Bytes held waiting for the rest of a frame. */
  get pendingBytes(): number {
    return this.#held;
  }

  /**
   * Appends `chunk` and returns every frame now complete, in order. Throws `ChainRuntimeError`
   * `BRIDGE_FRAME_INVALID` on a frame over {@link MAX_FRAME_BYTES} or a malformed body; the
   * stream cannot be resynchronised after that.
   */
  push(chunk: Uint8Array): T[] {
    let buffer: Uint8Array;
    if (this.#held === 0) {
      buffer = chunk;
    } else {
      // Keep a private copy: the caller may reuse its chunk buffer.
      this.#chunks.push(new Uint8Array(chunk));
      this.#held += chunk.length;
      if (this.#held < this.#needed) return [];
      buffer = this.#chunks.length === 1 ? (this.#chunks[0] as Uint8Array) : concatAll(this.#chunks, this.#held);
      this.#chunks = [];
      this.#held = 0;
    }
    const frames: T[] = [];
    for (;;) {
      if (buffer.length < HEADER_BYTES) {
        this.#needed = HEADER_BYTES;
        break;
      }
      const length = new DataView(buffer.buffer, buffer.byteOffset, buffer.byteLength).getUint32(0, false);
      if (length > MAX_FRAME_BYTES) throw invalid(`a frame of ${length} bytes exceeds ${MAX_FRAME_BYTES}`);
      if (buffer.length < HEADER_BYTES + length) {
        this.#needed = HEADER_BYTES + length;
        break;
      }
      frames.push(decodeBody(buffer.subarray(HEADER_BYTES, HEADER_BYTES + length), this.#accept));
      buffer = buffer.subarray(HEADER_BYTES + length);
    }
    if (buffer.length > 0) {
      this.#chunks.push(new Uint8Array(buffer)); // a copy, even of a Buffer
      this.#held = buffer.length;
    }
    return frames;
  }
}

function concatAll(chunks: readonly Uint8Array[], total: number): Uint8Array {
  const out = new Uint8Array(total);
  let offset = 0;
  for (const chunk of chunks) {
    out.set(chunk, offset);
    offset += chunk.length;
  }
  return out;
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
