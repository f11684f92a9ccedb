/**
 * The plain-data check the prelude runs on every value that leaves the isolate (tool arguments
 * and the script's return value). JSON.stringify alone would silently drop functions, turn a Map
 * into `{}` and throw an opaque error on cycles; this names the first offending value and where
 * it sits, so the script's author can fix it.
 *
 * Plain data: `null`, booleans, numbers, strings, arrays, objects whose prototype is
 * `Object.prototype` or `null` with data (not accessor) properties, and `Date` (sent as its ISO
 * text). Everything else (functions, symbols as values or keys, BigInt, cycles, getters, Map,
 * Set, typed arrays, class instances) is refused; a promise with a reminder to await it. (JSON
 * would drop a symbol key without a word, and the tool would get less than the script sent.)
 * @module
 */

import { withNullPrototype } from "./null-prototype.ts";

const objectPrototype = Object.prototype;
const arrayIsArray = Array.isArray;
const getPrototypeOf = Object.getPrototypeOf;
const getOwnPropertyDescriptor = Object.getOwnPropertyDescriptor;
const objectKeys = Object.keys;
const getOwnPropertySymbols = Object.getOwnPropertySymbols;
const datePrototype = Date.prototype;
const promisePrototype = Promise.prototype;

/** Deepest nesting checked; deeper values are refused rather than overflowing the stack. */
const MAX_DEPTH = 200;

/** `maxValues` when there is none: the largest small integer, so the count never leaves V8's fast integer form. */
const UNBOUNDED = 0x3fffffff;

/**
 * Describes the first value in `value` that is not plain data, e.g. `"a function at .callback"`,
 * or returns `undefined` when all of it is plain data. With `maxValues`, more values than that
 * (the value itself, and every array item and object field in it) is refused too, before they
 * are walked.
 *
 * It runs on every call's arguments, in a fresh context (cold code), so the common case (plain
 * data) allocates little per value: no closure, no path text; only the (empty) list of each
 * object's and array's symbol keys. The path of an offending value is
 * built only once one is found, from the keys still on the walk's stack.
 */
export function findNonPlainData(value: unknown, maxValues = UNBOUNDED): string | undefined {
  // One state serves every walk, made as the prelude loads (off a run's path: each null
  // prototype costs a fresh context a new map). A second one is made only for a walk that starts
  // inside another (a Proxy trap that calls a tool).
  const walk = idleWalk ?? newWalk();
  idleWalk = undefined;
  walk.what = "";
  walk.why = "";
  walk.depth = 0;
  // The value itself counts as one, as the host counts the arguments object.
  walk.left = maxValues - 1;
  walk.maxValues = maxValues;
  try {
    return visit(walk, value, 0) ? `${walk.what} at ${pathOf(walk)}${walk.why}` : undefined;
  } catch {
    return "a value that could not be inspected";
  } finally {
    // Nothing the script handed over stays reachable from here.
    walk.ancestors.length = 0;
    walk.keys.length = 0;
    idleWalk = walk;
  }
}

/**
 * A walk's state. Its stacks have no prototype: a setter, getter or read-only index the script
 * put on `Array.prototype` must not take, feed or refuse their writes.
 */
function newWalk(): Walk {
  return { ancestors: withNullPrototype([]), keys: withNullPrototype([]), what: "", why: "", depth: 0, left: 0, maxValues: 0 };
}

let idleWalk: Walk | undefined = newWalk();

/**
 * The state of one walk: a plain object and plain functions rather than a class, because every
 * run is a fresh context and a class costs its first instance there (its map, field
 * initialisers, private brand) ~25 µs before any value is checked. One state object per walk:
 * a Proxy's `getPrototypeOf` trap runs script code, which may start another walk.
 */
interface Walk {
  readonly ancestors: object[];
  readonly keys: (string | number)[];
  /** Set when a problem is found: what it is, at which depth, and the advice after the path. */
  what: string;
  why: string;
  depth: number;
  /** Array items and object fields still allowed (see `maxValues`). */
  left: number;
  maxValues: number;
}

/** The walk went past its `maxValues` (counted by each container as it is entered). */
function tooMany(walk: Walk, depth: number): true {
  return fail(walk, `more than ${walk.maxValues} values (the value, its items and fields)`, depth, "; pass large data as an artifact");
}

/** The path of the offending value, e.g. `.a[2].b`, or "the top level". */
function pathOf(walk: Walk): string {
  let text = "";
  for (let i = 0; i < walk.depth; i++) {
    const key = walk.keys[i] as string | number;
    text += typeof key === "number" ? `[${key}]` : `.${key}`;
  }
  return text === "" ? "the top level" : text;
}

/** True when `item` (at `depth`) holds something that is not plain data; see {@link Walk.what}. */
function visit(walk: Walk, item: unknown, depth: number): boolean {
  switch (typeof item) {
    case "string":
    case "number":
    case "boolean":
    case "undefined":
      return false;
    case "function":
      return fail(walk, "a function", depth);
    case "symbol":
      return fail(walk, "a symbol", depth);
    case "bigint":
      return fail(walk, "a BigInt", depth, " (send it as a string or number)");
    default:
      break;
  }
  if (item === null) return false;
  const obj = item as object;
  if (depth > MAX_DEPTH) return fail(walk, `a value nested deeper than ${MAX_DEPTH} levels`, depth);
  const { ancestors, keys } = walk;
  for (let i = 0; i < depth; i++) if (ancestors[i] === obj) return fail(walk, "a cycle", depth);
  if (arrayIsArray(obj)) {
    ancestors[depth] = obj;
    const list = obj as unknown[];
    if ((walk.left -= list.length) < 0) return tooMany(walk, depth);
    if (hasSymbolKey(obj)) return failSymbolKey(walk, depth);
    for (let index = 0; index < list.length; index++) {
      keys[depth] = index;
      if (visit(walk, list[index], depth + 1)) return true;
    }
    return false;
  }
  const proto: unknown = getPrototypeOf(obj);
  if (proto === datePrototype) return false;
  // The usual way a promise gets here: a tool call's result used without `await`.
  if (proto === promisePrototype) return fail(walk, "a Promise", depth, " (a tool call's result is a promise: await it, e.g. `await tools.name({...})`)");
  if (proto !== objectPrototype && proto !== null) {
    return fail(walk, describeKind(obj), depth, " (only plain objects, arrays and primitives cross)");
  }
  ancestors[depth] = obj;
  const names = objectKeys(obj);
  if ((walk.left -= names.length) < 0) return tooMany(walk, depth);
  if (hasSymbolKey(obj)) return failSymbolKey(walk, depth);
  for (let i = 0; i < names.length; i++) {
    const key = names[i] as string;
    const descriptor = getOwnPropertyDescriptor(obj, key);
    if (descriptor === undefined) continue;
    keys[depth] = key;
    if (descriptor.get !== undefined || descriptor.set !== undefined) return fail(walk, "a getter or setter", depth + 1);
    if (visit(walk, descriptor.value, depth + 1)) return true;
  }
  return false;
}

/**
 * True when `obj` has an enumerable own symbol key: JSON would drop it, and the tool would get
 * less than the script sent. (A non-enumerable key, symbol or string, is left out as JSON leaves
 * it out.)
 */
function hasSymbolKey(obj: object): boolean {
  const symbols = getOwnPropertySymbols(obj);
  for (let i = 0; i < symbols.length; i++) {
    if (getOwnPropertyDescriptor(obj, symbols[i] as symbol)?.enumerable === true) return true;
  }
  return false;
}

function failSymbolKey(walk: Walk, depth: number): true {
  return fail(walk, "a symbol key", depth, " (keys must be strings: JSON would drop it)");
}

function fail(walk: Walk, what: string, depth: number, why = ""): true {
  walk.what = what;
  walk.why = why;
  walk.depth = depth;
  return true;
}

function describeKind(obj: object): string {
  try {
    const ctor: unknown = (obj as { constructor?: unknown }).constructor;
    const name = typeof ctor === "function" ? ctor.name : "";
    if (!name) return "an object with a custom prototype";
    // "an Error", "an Order", "a Map", "a Uint8Array", "a URL": by the first letter, U left out
    // (close enough for class names). No method calls: the script may have replaced String and
    // RegExp methods.
    const first = name[0];
    const vowel = first === "A" || first === "E" || first === "I" || first === "O" || first === "a" || first === "e" || first === "i" || first === "o";
    return `${vowel ? "an" : "a"} ${name}`;
  } catch {
    return "an object with a custom prototype";
  }
}

/** UTF-8 byte length of `text` without allocating. */
export function utf8Length(text: string): number {
  let bytes = 0;
  for (let index = 0; index < text.length; index++) {
    const code = text.charCodeAt(index);
    if (code < 0x80) bytes += 1;
    else if (code < 0x800) bytes += 2;
    else if (code >= 0xd800 && code <= 0xdbff && index + 1 < text.length) {
      const next = text.charCodeAt(index + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        bytes += 4;
        index++;
      } else bytes += 3;
    } else bytes += 3;
  }
  return bytes;
}
