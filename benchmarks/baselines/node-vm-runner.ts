/**
 * Baseline "node:vm": the script runs in a `node:vm` context of the host's own isolate. No
 * isolation, no copying, no limits: tool calls are plain function calls and results are shared
 * objects. It is the floor every sandboxed figure is compared with.
 *
 * Each distinct script is compiled once into an async function and cached, and one context is
 * reused for every run, so a run costs exactly one async function call plus its tool calls.
 * @module
 */
import vm from "node:vm";
import type { BaselineTool } from "../support/fixtures.ts";

type CompiledScript = (tools: Readonly<Record<string, BaselineTool>>) => Promise<unknown>;

/** Options of a {@link NodeVmRunner}. */
export interface NodeVmRunnerOptions {
  /** Create a new context for every run instead of reusing one. @defaultValue false */
  readonly freshContext?: boolean;
}

/** Runs script bodies in a `node:vm` context of the host isolate (the no-isolation floor). */
export class NodeVmRunner {
  readonly #context: vm.Context;
  readonly #fresh: boolean;
  readonly #scripts = new Map<string, vm.Script>();
  readonly #compiled = new Map<string, CompiledScript>();

  /** @param options - see {@link NodeVmRunnerOptions}. */
  constructor(options: NodeVmRunnerOptions = {}) {
    this.#fresh = options.freshContext ?? false;
    this.#context = vm.createContext({});
  }

  /**
   * Runs `body` (the body of an async function that sees `tools`) and returns its value.
   * Rejects with whatever the script throws.
   */
  run(body: string, tools: Readonly<Record<string, BaselineTool>>): Promise<unknown> {
    if (this.#fresh) return this.#script(body).runInContext(vm.createContext({}))(tools) as Promise<unknown>;
    let fn = this.#compiled.get(body);
    if (fn === undefined) {
      fn = this.#script(body).runInContext(this.#context) as CompiledScript;
      this.#compiled.set(body, fn);
    }
    return fn(tools);
  }

  #script(body: string): vm.Script {
    let script = this.#scripts.get(body);
    if (script === undefined) {
      script = new vm.Script(`(async (tools) => {\n${body}\n})`, { filename: "node-vm-baseline.js" });
      this.#scripts.set(body, script);
    }
    return script;
  }

  /** Creates and drops one context: the floor of "cold acquire". */
  static acquireCold(): void {
    const context = vm.createContext({});
    vm.runInContext("1", context);
  }
}
