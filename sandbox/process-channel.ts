/**
 * One end of the host <-> child pipe: length-prefixed msgpack messages (the codec's envelope)
 * over a stream socket, used the same way by the host (`sandbox-process.ts`) and the child
 * (`child/child-loop.ts`).
 *
 * Writes are coalesced: every message sent in one tick (the current callback and the microtasks
 * it leaves) is encoded as it is sent, and the lot is joined and written with a single
 * `socket.write` from `process.nextTick`, so fifty parallel calls cost one write each way, not
 * fifty (measured: a 50-call `Promise.all` is one write of 50 calls from the child and one of
 * 50 results from the host). `nextTick` rather than `setImmediate`: the same coalescing here,
 * without waiting for the check phase. Where a batch is known to be complete, the owner calls
 * {@link ProcessChannel.flush} instead of waiting for the tick: the host after a run message,
 * the child after the frames of each entry into the isolate (measured: ~10% off 50 sequential
 * or parallel calls through the process driver). Reads go through a {@link FrameDecoder}
 * with the receiving side's guard; a malformed stream is fatal to the channel (it cannot be
 * resynchronised) and is reported through `onClose`.
 * @module
 */
import type { Duplex } from "node:stream";
import { encodeMessage, FrameDecoder, type MessageGuard } from "../src/bridge/codec.ts";
import { describeThrown } from "../src/kernel/index.ts";

/** What a {@link ProcessChannel} reports. */
export interface ProcessChannelHandlers<In> {
  /** One decoded message, in stream order. */
  readonly onMessage: (message: In) => void;
  /**
   * The stream ended or broke; `reason` is set for a broken or malformed stream, and `malformed`
   * is true when the other side sent what is no message (this side ended the stream). Called once.
   */
  readonly onClose: (reason?: string, malformed?: boolean) => void;
}

/** Sends `Out` messages and receives `In` messages over one socket; see the module comment. */
export class ProcessChannel<In, Out> {
  readonly #socket: Duplex;
  readonly #decoder: FrameDecoder<In>;
  readonly #handlers: ProcessChannelHandlers<In>;
  #queue: Uint8Array[] = [];
  #scheduled = false;
  #closed = false;

  /** Starts reading `socket` at once. */
  constructor(socket: Duplex, accept: MessageGuard<In>, handlers: ProcessChannelHandlers<In>) {
    this.#socket = socket;
    this.#decoder = new FrameDecoder(accept);
    this.#handlers = handlers;
    socket.on("data", (chunk: Buffer) => this.#onData(chunk));
    socket.on("error", (error: Error) => this.#close(`the pipe failed: ${error.message}`));
    socket.on("end", () => {
      // The other side will send nothing more: nothing here can go on without it.
      socket.destroy();
      this.#close();
    });
    socket.on("close", () => this.#close());
  }

  /** True once the stream ended or {@link destroy} was called. */
  get isClosed(): boolean {
    return this.#closed;
  }

  /**
   * Encodes and queues `message`; it is written, with everything else sent this tick, in one
   * write. Dropped once closed. Throws `ChainRuntimeError` `BRIDGE_FRAME_INVALID` when the
   * message is larger than the codec's `MAX_FRAME_BYTES`.
   */
  send(message: Out): void {
    if (this.#closed) return;
    this.#queue.push(encodeMessage(message));
    if (this.#scheduled) return;
    this.#scheduled = true;
    process.nextTick(this.#flush);
  }

  /** Writes what is queued now, without waiting for the end of the turn. */
  flush(): void {
    this.#flush();
  }

  /** Closes the socket; queued messages are dropped. */
  destroy(): void {
    this.#queue = [];
    this.#socket.destroy();
    this.#close();
  }

  /** Lets the process exit while this channel is open (the socket stops holding the loop). */
  unref(): void {
    (this.#socket as Partial<{ unref(): void }>).unref?.();
  }

  /** Makes the socket hold the event loop again. */
  ref(): void {
    (this.#socket as Partial<{ ref(): void }>).ref?.();
  }

  readonly #flush = (): void => {
    this.#scheduled = false;
    const queue = this.#queue;
    if (queue.length === 0 || this.#closed) return;
    this.#queue = [];
    this.#socket.write(queue.length === 1 ? (queue[0] as Uint8Array) : Buffer.concat(queue));
  };

  #onData(chunk: Buffer): void {
    if (this.#closed) return;
    let messages: In[];
    try {
      messages = this.#decoder.push(chunk);
    } catch (error) {
      this.#socket.destroy();
      this.#close(`the pipe carried a malformed message: ${describeThrown(error)}`, true);
      return;
    }
    for (const message of messages) {
      if (this.#closed) return;
      this.#handlers.onMessage(message);
    }
  }

  #close(reason?: string, malformed = false): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#queue = [];
    this.#handlers.onClose(reason, malformed);
  }
}
