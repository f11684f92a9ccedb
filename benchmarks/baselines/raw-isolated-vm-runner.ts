/**
 * Baseline "raw isolated-vm": the smallest runner that still gives each script real isolation,
 * written by hand so the suite shows what isochain adds on top of isolated-vm itself.
 *
 *   host                                        isolate (pooled; fresh context per run)
 *   run(body) ── createContextSync ───────────▶ prelude: tools = Proxy, pending Map, __resolve
 *              ── script.run({ promise }) ────▶ (async () => { body })().then(JSON.stringify)
 *   callOut(id, name, argsJson) ◀── ivm.Callback({ ignored: true }) ── tools.echo(args)
 *   tool(args) ... resolverRef.applyIgnored(id, ok, resultJson) ──▶ pending.get(id).resolve(...)
 *
 * Calls go out through an `ivm.Callback` with `ignored: true` (the isolate does not wait for the
 * host) and come back through a host-held `Reference` to an in-isolate resolver called with
 * `applyIgnored`. Arguments and results cross as JSON text. Isolates are pooled and keep their
 * compiled prelude and scripts; every run gets a fresh context, released when the run ends.
 *
 * A fresh V8 context costs ~1 ms on a small machine, more than a whole warm chain should, so by
 * default each pooled isolate prepares its next context (prelude installed) off the critical
 * path, on isolated-vm's thread, right after a run: `warm()` waits until every spare is ready.
 * Back-to-back runs still pay for context creation in throughput, not in latency after a pause.
 * No CPU or wall-time limits: this is the floor for an in-process isolated driver.
 * @module
 */
import ivm from "isolated-vm";
import type { BaselineTool } from "../support/fixtures.ts";

const PRELUDE = `"use strict";
(() => {
  const callOut = globalThis.__callOut;
  delete globalThis.__callOut;
  const pending = new Map();
  let next = 0;
  globalThis.__resolve = (id, ok, json) => {
    const entry = pending.get(id);
    if (entry === undefined) return;
    pending.delete(id);
    if (ok) entry.resolve(JSON.parse(json)); else entry.reject(new Error(json));
  };
  const call = (name, args) => new Promise((resolve, reject) => {
    const id = next++;
    pending.set(id, { resolve, reject });
    callOut(id, name, JSON.stringify(args === undefined ? {} : args));
  });
  globalThis.tools = new Proxy({}, { get: (_t, name) => typeof name === "string" ? (args) => call(name, args) : undefined });
})();`;

/** Compiled scripts kept per isolate. */
const SCRIPT_CACHE_SIZE = 32;

/** Options of a {@link RawIsolatedVmRunner}. */
export interface RawIsolatedVmRunnerOptions {
  /** Isolates kept; runs beyond it wait for a free one. @defaultValue 2 */
  readonly poolSize?: number;
  /** Heap limit of each isolate, MiB. @defaultValue 128 */
  readonly memoryLimitMb?: number;
  /** Prepare each isolate's next context in the background after a run. @defaultValue true */
  readonly prepareAhead?: boolean;
}

type CallHandler = (id: number, name: string, argsJson: string) => void;

/** A fresh context with the prelude installed, waiting for its run. */
interface PreparedContext {
  readonly context: ivm.Context;
  readonly resolver: ivm.Reference;
  /** Where the context's `callOut` callback forwards to; set by the run that takes it. */
  readonly port: { handler: CallHandler | undefined };
}

interface PooledIsolate {
  readonly isolate: ivm.Isolate;
  readonly prelude: ivm.Script;
  readonly scripts: Map<string, ivm.Script>;
  spare: Promise<PreparedContext | undefined> | undefined;
}

/** A pooled isolated-vm runner with a fresh context per run (the isolated floor). */
export class RawIsolatedVmRunner {
  readonly #poolSize: number;
  readonly #memoryLimitMb: number;
  readonly #prepareAhead: boolean;
  readonly #idle: PooledIsolate[] = [];
  readonly #all: PooledIsolate[] = [];
  readonly #waiters: ((entry: PooledIsolate) => void)[] = [];
  #closed = false;

  /** @param options - see {@link RawIsolatedVmRunnerOptions}. */
  constructor(options: RawIsolatedVmRunnerOptions = {}) {
    this.#poolSize = options.poolSize ?? 2;
    this.#memoryLimitMb = options.memoryLimitMb ?? 128;
    this.#prepareAhead = options.prepareAhead ?? true;
  }

  /** Creates every isolate of the pool and waits until each holds a prepared context. */
  async warm(): Promise<void> {
    while (this.#all.length < this.#poolSize) this.#idle.push(this.#create());
    if (!this.#prepareAhead) return;
    for (const entry of this.#idle) entry.spare ??= this.#prepareSpare(entry);
    await Promise.all(this.#idle.map((entry) => entry.spare));
  }

  /** Heap statistics of each pooled isolate. */
  heapStatistics(): ivm.HeapStatistics[] {
    return this.#all.map((entry) => entry.isolate.getHeapStatisticsSync());
  }

  /**
   * Runs `body` (the body of an async function that sees `tools`) in a fresh context of a pooled
   * isolate and returns its JSON-decoded value. Rejects when the script throws; a tool that
   * throws rejects the script's call.
   */
  async run(body: string, tools: Readonly<Record<string, BaselineTool>>): Promise<unknown> {
    const entry = await this.#acquire();
    let prepared: PreparedContext | undefined;
    try {
      prepared = (await entry.spare) ?? (await prepare(entry));
      entry.spare = undefined;
      const { resolver, port } = prepared;
      port.handler = (id, name, argsJson) => {
        const settle = (ok: boolean, text: string): void => {
          try {
            resolver.applyIgnored(undefined, [id, ok, text]);
          } catch {
            // The run ended and its context is gone: nobody is waiting for this result.
          }
        };
        const tool = tools[name];
        if (tool === undefined) return settle(false, `unknown tool ${name}`);
        Promise.resolve()
          .then(() => tool(JSON.parse(argsJson) as Record<string, unknown>))
          .then(
            (value) => settle(true, JSON.stringify(value)),
            (error: unknown) => settle(false, String(error)),
          );
      };
      const json = (await this.#script(entry, body).run(prepared.context, { promise: true, copy: true })) as string | undefined;
      return json === undefined ? undefined : (JSON.parse(json) as unknown);
    } finally {
      if (prepared !== undefined) {
        prepared.port.handler = undefined;
        prepared.resolver.release();
        prepared.context.release();
      }
      if (this.#prepareAhead && !this.#closed) entry.spare = this.#prepareSpare(entry);
      this.#release(entry);
    }
  }

  /** Disposes every isolate; later runs reject. */
  close(): void {
    this.#closed = true;
    for (const entry of this.#all) if (!entry.isolate.isDisposed) entry.isolate.dispose();
    this.#all.length = 0;
    this.#idle.length = 0;
  }

  /** Creates an isolate, loads the prelude into a context, and disposes it: "cold acquire". */
  static async acquireCold(memoryLimitMb = 128): Promise<void> {
    const isolate = new ivm.Isolate({ memoryLimit: memoryLimitMb });
    try {
      const entry = { isolate, prelude: isolate.compileScriptSync(PRELUDE), scripts: new Map(), spare: undefined };
      (await prepare(entry)).context.release();
    } finally {
      isolate.dispose();
    }
  }

  /** Creates a context on a warm isolate, installs the prelude and drops it (no isolate creation). */
  async contextOnly(): Promise<void> {
    const entry = await this.#acquire();
    try {
      const prepared = await prepare(entry);
      prepared.resolver.release();
      prepared.context.release();
    } finally {
      this.#release(entry);
    }
  }

  #create(): PooledIsolate {
    const isolate = new ivm.Isolate({ memoryLimit: this.#memoryLimitMb });
    const prelude = isolate.compileScriptSync(PRELUDE, { filename: "prelude.js" });
    const entry: PooledIsolate = { isolate, prelude, scripts: new Map(), spare: undefined };
    this.#all.push(entry);
    return entry;
  }

  #prepareSpare(entry: PooledIsolate): Promise<PreparedContext | undefined> {
    // A failure (the isolate was disposed by close()) surfaces as "no spare": run prepares inline.
    return prepare(entry).catch(() => undefined);
  }

  #acquire(): Promise<PooledIsolate> {
    if (this.#closed) return Promise.reject(new Error("runner closed"));
    const idle = this.#idle.pop();
    if (idle !== undefined) return Promise.resolve(idle);
    if (this.#all.length < this.#poolSize) return Promise.resolve(this.#create());
    return new Promise((resolve) => this.#waiters.push(resolve));
  }

  #release(entry: PooledIsolate): void {
    if (this.#closed) return;
    const waiter = this.#waiters.shift();
    if (waiter !== undefined) waiter(entry);
    else this.#idle.push(entry);
  }

  #script(entry: PooledIsolate, body: string): ivm.Script {
    let script = entry.scripts.get(body);
    if (script === undefined) {
      const wrapped = `(async () => {\n${body}\n})().then((value) => JSON.stringify(value))`;
      script = entry.isolate.compileScriptSync(wrapped, { filename: "script.js" });
      // Bounded, oldest out: a new script per run must not hold every compiled one.
      if (entry.scripts.size >= SCRIPT_CACHE_SIZE) {
        const oldest = entry.scripts.keys().next().value;
        if (oldest !== undefined) {
          entry.scripts.get(oldest)?.release();
          entry.scripts.delete(oldest);
        }
      }
      entry.scripts.set(body, script);
    }
    return script;
  }
}

/** Creates a fresh context on `entry`'s isolate with the prelude installed (async, off the host thread). */
async function prepare(entry: Pick<PooledIsolate, "isolate" | "prelude">): Promise<PreparedContext> {
  const context = await entry.isolate.createContext();
  const port: PreparedContext["port"] = { handler: undefined };
  const callOut = new ivm.Callback((id: number, name: string, argsJson: string) => port.handler?.(id, name, argsJson), {
    ignored: true,
  });
  await context.global.set("__callOut", callOut);
  await entry.prelude.run(context);
  const resolver = await context.global.get("__resolve", { reference: true });
  return { context, resolver, port };
}
