/**
 * Baseline "child process": a bare host <-> child round trip over the child's stdio pipes (on
 * Linux and macOS a Unix socket pair), newline-delimited JSON frames, requests matched by id and
 * freely pipelined. No sandbox, no scripts: it is the floor any process-isolated driver pays per
 * message, next to which the in-process figures can be read.
 *
 * The child is `child-echo-worker.ts`, run by the same Node binary.
 * @module
 */
import { type ChildProcessByStdio, spawn } from "node:child_process";
import type { Readable, Writable } from "node:stream";
import { fileURLToPath } from "node:url";
import { LineSplitter } from "./line-splitter.ts";

const WORKER = fileURLToPath(new URL("./child-echo-worker.ts", import.meta.url));

/** What the child does with a frame: send the payload back, or only acknowledge it. */
export type EchoOp = "echo" | "ack";

/** A child process answering framed requests; see the module comment. */
export class ChildProcessEcho {
  readonly #child: ChildProcessByStdio<Writable, Readable, null>;
  readonly #pending = new Map<number, (payload: unknown) => void>();
  #next = 0;
  readonly #splitter = new LineSplitter((line) => this.#onFrame(line));
  #exited = false;

  private constructor(child: ChildProcessByStdio<Writable, Readable, null>) {
    this.#child = child;
    child.stdout.setEncoding("utf8");
    child.stdout.on("data", (chunk: string) => this.#splitter.push(chunk));
    child.on("exit", () => {
      this.#exited = true;
    });
  }

  /** Spawns the child and waits for a first round trip. Rejects when it cannot start. */
  static async start(): Promise<ChildProcessEcho> {
    const child = spawn(process.execPath, [WORKER], { stdio: ["pipe", "pipe", "inherit"] });
    const echo = new ChildProcessEcho(child);
    await new Promise<void>((resolve, reject) => {
      child.once("error", reject);
      echo.request("ack", null).then(() => {
        child.off("error", reject);
        resolve();
      }, reject);
    });
    return echo;
  }

  /** Spawns a child, does one round trip and stops it: the cold cost of a process sandbox. */
  static async startCold(): Promise<void> {
    const echo = await ChildProcessEcho.start();
    await echo.close();
  }

  /** Sends one frame and resolves with the child's answer (the payload for `echo`). */
  request(op: EchoOp, payload: unknown): Promise<unknown> {
    if (this.#exited) return Promise.reject(new Error("child exited"));
    const id = this.#next++;
    return new Promise((resolve) => {
      this.#pending.set(id, resolve);
      this.#child.stdin.write(`${JSON.stringify({ id, op, payload })}\n`);
    });
  }

  /** Closes the child's stdin and waits for it to exit. */
  async close(): Promise<void> {
    if (this.#exited) return;
    const exited = new Promise<void>((resolve) => this.#child.once("exit", () => resolve()));
    this.#child.stdin.end();
    const timer = setTimeout(() => this.#child.kill("SIGKILL"), 2_000);
    await exited;
    clearTimeout(timer);
  }

  #onFrame(line: string): void {
    const frame = JSON.parse(line) as { id: number; payload?: unknown };
    const resolve = this.#pending.get(frame.id);
    this.#pending.delete(frame.id);
    resolve?.(frame.payload);
  }
}
