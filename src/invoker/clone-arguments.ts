/**
 * The one copy of a call's arguments that the invoker trusts.
 *
 * Invariants:
 * - The walk never runs caller code: proxies are refused before anything is read, accessor
 *   properties are refused from their descriptors (the getter is never called), and only own
 *   data properties are read, each exactly once.
 * - The copy is plain JSON data in fresh objects: arrays and `{}` objects, strings, finite
 *   numbers, booleans and `null`. `__proto__` keys are dropped, so neither the copy nor any
 *   later assignment from it can reach a prototype.
 * - JSON semantics where JSON has them: `undefined` object fields are left out, and
 *   non-enumerable properties are ignored. Everything JSON would silently lose (functions,
 *   symbols, BigInt, NaN/Infinity, class instances, Maps, Dates, typed arrays, holes) is an error
 *   instead, so what is validated, shown to the approver and executed is what the caller sent.
 * - Bounded: depth above {@link MAX_ARGUMENT_DEPTH}, and more than {@link MAX_ARGUMENT_NODES}
 *   values in all (which also stops a shared-reference graph from expanding exponentially).
 */
import { types } from "node:util";
import { MAX_ARGUMENT_NODES } from "../kernel/argument-limits.ts";
import { describeThrown } from "../kernel/index.ts";

/** Deepest nesting an argument value may have. */
export const MAX_ARGUMENT_DEPTH = 64;

export { MAX_ARGUMENT_NODES } from "../kernel/argument-limits.ts";

/** The outcome of {@link cloneArguments}: the copy, or where and why the value is not plain data. */
export type CloneArgumentsResult =
  | { readonly ok: true; readonly value: unknown }
  | { readonly ok: false; readonly reason: string };

const hasOwn = Object.prototype.hasOwnProperty;

/** Limits of {@link cloneArguments}. */
export interface CloneArgumentsOptions {
  /** @defaultValue {@link MAX_ARGUMENT_DEPTH} */
  readonly maxDepth?: number;
  /** @defaultValue {@link MAX_ARGUMENT_NODES} */
  readonly maxNodes?: number;
}

class CloneWalk {
  readonly maxDepth: number;
  readonly maxNodes: number;
  nodes = 0;
  readonly ancestors = new Set<object>();
  /** Keys from the root to the value being copied; the path string is built only on failure. */
  readonly keys: (string | number)[] = [];
  failure: string | undefined;

  constructor(options: CloneArgumentsOptions) {
    this.maxDepth = options.maxDepth ?? MAX_ARGUMENT_DEPTH;
    this.maxNodes = options.maxNodes ?? MAX_ARGUMENT_NODES;
  }

  fail(why: string): undefined {
    if (this.failure === undefined) {
      const path = formatPath(this.keys);
      this.failure = `${path === "" ? "the arguments object" : `argument "${path}"`} ${why}`;
    }
    return undefined;
  }

  /** {@link fail} for more than `maxNodes` values. */
  tooLarge(): undefined {
    return this.fail(`makes the arguments too large (more than ${this.maxNodes} values); pass large data as an artifact`);
  }

  /** Returns the copy, or `undefined` with {@link failure} set. `undefined` input is handled by callers. */
  copy(value: unknown, depth: number): unknown {
    if (++this.nodes > this.maxNodes) {
      return this.tooLarge();
    }
    switch (typeof value) {
      case "string":
      case "boolean":
        return value;
      case "number":
        return Number.isFinite(value) ? value : this.fail(`is ${String(value)}, which is not a JSON number`);
      case "bigint":
        return this.fail("is a BigInt, which is not JSON; pass it as a string");
      case "symbol":
        return this.fail("is a symbol, which is not JSON");
      case "function":
        return this.fail("is a function, which is not JSON");
      case "undefined":
        return this.fail("is undefined, which is not JSON");
      default:
        break;
    }
    if (value === null) return null;
    const obj = value as object;
    if (types.isProxy(obj)) return this.fail("is a Proxy; pass plain data");
    if (depth >= this.maxDepth) return this.fail(`is nested deeper than ${this.maxDepth} levels`);
    if (this.ancestors.has(obj)) return this.fail("refers back to itself (a cycle); pass plain data");
    const proto: unknown = Object.getPrototypeOf(obj);
    if (Array.isArray(obj)) {
      // Array.prototype (of any realm) is itself an array; a subclass's prototype is not.
      if (!Array.isArray(proto)) return this.fail("is an array subclass; pass a plain array");
      this.ancestors.add(obj);
      const out = this.copyArray(obj as unknown[], depth);
      this.ancestors.delete(obj);
      return out;
    }
    if (proto !== null && Object.getPrototypeOf(proto) !== null) {
      const name = constructorName(obj);
      return this.fail(`is ${name ? `a ${name}` : "an object with a custom prototype"}, not a plain object; pass plain data`);
    }
    this.ancestors.add(obj);
    const out = this.copyObject(obj, depth);
    this.ancestors.delete(obj);
    return out;
  }

  private copyArray(source: unknown[], depth: number): unknown[] | undefined {
    const length = source.length;
    if (this.nodes + length > this.maxNodes) {
      return this.tooLarge();
    }
    const out = new Array<unknown>(length);
    const keys = this.keys;
    const at = keys.length;
    for (let i = 0; i < length; i++) {
      keys[at] = i;
      const descriptor = Object.getOwnPropertyDescriptor(source, i);
      if (descriptor === undefined) return this.fail("is a hole in a sparse array; pass a dense array");
      if (!("value" in descriptor)) return this.fail("is a getter/setter property; pass plain data");
      const item = descriptor.value as unknown;
      if (item === undefined) {
        out[i] = null; // JSON writes undefined array items as null
        continue;
      }
      const copied = this.copy(item, depth + 1);
      if (this.failure !== undefined) return undefined;
      out[i] = copied;
    }
    keys.length = at;
    return out;
  }

  private copyObject(source: object, depth: number): Record<string, unknown> | undefined {
    const out: Record<string, unknown> = {};
    const keys = this.keys;
    const at = keys.length;
    const ownKeys = Reflect.ownKeys(source);
    // Past the bound with its keys alone: said before any of them is read.
    if (this.nodes + ownKeys.length > this.maxNodes) {
      return this.tooLarge();
    }
    for (const key of ownKeys) {
      if (typeof key === "symbol") {
        keys.length = at;
        return this.fail(`has a symbol key (${String(key)}); pass plain data`);
      }
      const descriptor = Object.getOwnPropertyDescriptor(source, key);
      if (descriptor === undefined || !descriptor.enumerable) continue;
      keys[at] = key;
      if (!("value" in descriptor)) return this.fail("is a getter/setter property; pass plain data");
      if (key === "__proto__") continue; // dropped: never a prototype, never a field
      const field = descriptor.value as unknown;
      if (field === undefined) continue; // JSON leaves undefined fields out
      const copied = this.copy(field, depth + 1);
      if (this.failure !== undefined) return undefined;
      out[key] = copied;
    }
    keys.length = at;
    return out;
  }
}

/** `["items", 0, "name"]` → `items[0].name`. */
function formatPath(keys: readonly (string | number)[]): string {
  let path = "";
  for (const key of keys) path = typeof key === "number" ? `${path}[${key}]` : path === "" ? key : `${path}.${key}`;
  return path;
}

function constructorName(obj: object): string | undefined {
  try {
    // Reads the prototype's own `constructor` data property only; never calls a getter.
    const proto: unknown = Object.getPrototypeOf(obj);
    if (proto === null || typeof proto !== "object" || !hasOwn.call(proto, "constructor")) return undefined;
    const descriptor = Object.getOwnPropertyDescriptor(proto, "constructor");
    const ctor: unknown = descriptor && "value" in descriptor ? descriptor.value : undefined;
    return typeof ctor === "function" && typeof ctor.name === "string" && ctor.name !== "" ? ctor.name : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Makes one plain-JSON copy of `value` (see the module comment for the rules). The copy is what
 * the invoker validates, shows the approver, resolves and executes, so a caller that changes
 * its object later, or hands over a getter, cannot make them differ.
 *
 * Never throws: a value that is not plain data gives `{ ok: false, reason }` naming the path,
 * e.g. `argument "filter.since" is a Date, not a plain object; pass plain data`.
 */
export function cloneArguments(value: unknown, options: CloneArgumentsOptions = {}): CloneArgumentsResult {
  const walk = new CloneWalk(options);
  try {
    const copy = walk.copy(value, 0);
    if (walk.failure !== undefined) return { ok: false, reason: walk.failure };
    return { ok: true, value: copy };
  } catch (error) {
    // Only exotic host objects can throw from descriptor reads; report rather than crash.
    return { ok: false, reason: `arguments could not be read: ${describeThrown(error)}` };
  }
}
