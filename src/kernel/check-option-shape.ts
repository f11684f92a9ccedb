import { ChainRuntimeError } from "./errors.ts";
import { suggestNames } from "./suggest-names.ts";

/**
 * Shape checks for constructor options: run once at construction, so a wrong object is refused
 * where it was passed, not at the first call that trips over it. They read each option once and
 * call nothing.
 * @module
 */

/**
 * What a refused value is, for a message: its kind (a short string or number as it is), never an
 * object's content (which may be huge or secret).
 */
export function describeKind(value: unknown): string {
  if (value === null || value === undefined || typeof value === "number" || typeof value === "boolean") return String(value);
  if (typeof value === "string") return JSON.stringify(value.length > 60 ? `${value.slice(0, 60)}…` : value);
  if (Array.isArray(value)) return "an array";
  return typeof value === "object" ? "an object" : `a ${typeof value}`;
}

/**
 * @throws ChainRuntimeError `ARGUMENT_INVALID` "`<owner>` options.`<argument>` must be `<expected>`"
 * when `value` is not an object with every method in `methods` (`details.argument`, and
 * `details.missing` for the first method it lacks).
 */
export function checkMethods(owner: string, argument: string, expected: string, value: unknown, methods: readonly string[]): void {
  if (typeof value !== "object" || value === null || Array.isArray(value)) refuseOption(owner, argument, expected, `got ${describeKind(value)}`);
  const missing = methods.find((method) => typeof (value as Record<string, unknown>)[method] !== "function");
  if (missing !== undefined) refuseOption(owner, argument, expected, `it has no ${missing}() method`, { missing });
}

/** The hook names `Hooks` knows. */
const HOOK_NAMES = ["TOOL_START", "TOOL_END", "CHAIN_START", "CHAIN_END", "onHookError"] as const;

/**
 * @throws ChainRuntimeError `ARGUMENT_INVALID` unless `hooks` is an object whose given hooks are
 * functions and, for a plain object, whose every function is a hook: a misspelt one
 * (`TOOL_STRAT`) would otherwise never fire, without a word. Fields that are not functions (the
 * state a hook keeps) are the caller's, as is anything on an instance of a class of its own.
 */
export function checkHooks(owner: string, hooks: unknown): void {
  if (typeof hooks !== "object" || hooks === null || Array.isArray(hooks)) refuseOption(owner, "hooks", "an object of hook functions", `got ${describeKind(hooks)}`);
  for (const name of HOOK_NAMES) {
    const hook = (hooks as Record<string, unknown>)[name];
    if (hook !== undefined && typeof hook !== "function") refuseOption(owner, `hooks.${name}`, "a function when given", `got ${describeKind(hook)}`);
  }
  const prototype: unknown = Object.getPrototypeOf(hooks);
  if (prototype !== Object.prototype && prototype !== null) return;
  const known: readonly string[] = HOOK_NAMES;
  for (const key of Object.keys(hooks)) {
    if (known.includes(key) || typeof (hooks as Record<string, unknown>)[key] !== "function") continue;
    const near = namesCloseTo(key, known);
    refuseOption(owner, "hooks", `an object of ${known.join(", ")}`, `it has no hook ${JSON.stringify(key)}${near.length === 0 ? "" : ` (did you mean ${near.join(" or ")}?)`}`, {
      hook: key,
    });
  }
}

/** @throws ChainRuntimeError `ARGUMENT_INVALID` "`<owner>` options.`<argument>` must be `<expected>`; `<why>`." */
export function refuseOption(owner: string, argument: string, expected: string, why: string, details: Record<string, unknown> = {}): never {
  throw new ChainRuntimeError("ARGUMENT_INVALID", `${owner} options.${argument} must be ${expected}; ${why}.`, { details: { argument, ...details } });
}

/** Refuses `tools` given beside `toolbox`: one of them would be ignored without a word. */
export function refuseToolsBesideToolbox(owner: string, options: { readonly toolbox?: unknown; readonly tools?: unknown }): void {
  if (options.toolbox !== undefined && options.tools !== undefined) {
    refuseOption(owner, "tools", "left out when toolbox is given", "got both, and tools would be ignored: put every tool in the one Toolbox");
  }
}

/** Duck-typed: a signal from another realm or a polyfill is an AbortSignal too. */
export function isAbortSignalLike(value: unknown): boolean {
  if (typeof value !== "object" || value === null) return false;
  const signal = value as { aborted?: unknown; addEventListener?: unknown; removeEventListener?: unknown };
  return typeof signal.aborted === "boolean" && typeof signal.addEventListener === "function" && typeof signal.removeEventListener === "function";
}

/** The methods of a blob store the invoker and its sessions call. */
export const BLOB_STORE_METHODS = ["put", "resolve", "pin", "unpin"] as const;

/**
 * The field names of an options type, as a list the compiler keeps complete: every field of `T`
 * must be named (`true`), and nothing else may be.
 */
export function optionNames<T>(names: { readonly [K in keyof Required<T>]: true }): readonly string[] {
  return Object.freeze(Object.keys(names));
}

/**
 * @throws ChainRuntimeError `ARGUMENT_INVALID` unless `options` is `undefined` or an object
 * whose every own field is one of `known`: a misspelt option (`tracestore`) would otherwise be
 * ignored without a word, and the call would not do what was asked. The message names the field,
 * the known ones it is close to ("did you mean traceStore?") and all of them.
 */
export function checkOptionNames(owner: string, options: unknown, known: readonly string[]): void {
  if (options === undefined) return;
  if (typeof options !== "object" || options === null || Array.isArray(options)) {
    const hint = typeof options === "string" && known.includes("dir") ? ` (a directory goes in { dir: ${describeKind(options)} })` : "";
    throw new ChainRuntimeError("ARGUMENT_INVALID", `${owner} options must be an object of ${known.join(", ")}; got ${describeKind(options)}${hint}.`, {
      details: { argument: "options" },
    });
  }
  const unknown = unknownField(options, known);
  if (unknown !== undefined) {
    throw new ChainRuntimeError("ARGUMENT_INVALID", `${owner} options has no field ${unknown.says}`, { details: { argument: unknown.key } });
  }
}

/**
 * The first own key of `object` that is not one of `known`, with the rest of a message naming
 * it: `"riskLevel"; did you mean risk? (fields: name, risk, ...).`. `undefined` when every key
 * is known. Reads keys only (never a value).
 */
export function unknownField(object: object, known: readonly string[]): { readonly key: string; readonly says: string } | undefined {
  for (const key of Object.keys(object)) {
    if (known.includes(key)) continue;
    const near = namesCloseTo(key, known);
    return { key, says: `${JSON.stringify(key)}${near.length === 0 ? "" : `; did you mean ${near.join(" or ")}?`} (fields: ${known.join(", ")}).` };
  }
  return undefined;
}

/** The known names `key` may have meant: the one it is in other case, else the nearest ones. */
function namesCloseTo(key: string, known: readonly string[]): string[] {
  const sameLetters = known.find((name) => name.toLowerCase() === key.toLowerCase());
  return sameLetters === undefined ? suggestNames(key, known) : [sameLetters];
}
