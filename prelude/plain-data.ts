/**
 * The plain-data check the prelude runs on every value that leaves the isolate (tool arguments
 * and the script's return value). JSON.stringify alone would silently drop functions, turn a Map
 * into `{}` and throw an opaque error on cycles; this names the first offending value and where
 * it sits, so the script's author can fix it.
 *
 * Plain data: `null`, booleans, numbers, strings, arrays, objects whose prototype is
 * `Object.prototype` or `null` with data (not accessor) properties, and `Date` (sent as its ISO
 * text). Everything else (functions, symbols, BigInt, cycles, getters, Map, Set, typed arrays,
 * class instances) is refused.
 * @module
 */

const objectPrototype = Object.prototype;
const arrayIsArray = Array.isArray;
const getPrototypeOf = Object.getPrototypeOf;
const getOwnPropertyDescriptor = Object.getOwnPropertyDescriptor;
const objectKeys = Object.keys;
const datePrototype = Date.prototype;

/** Deepest nesting checked; deeper values are refused rather than overflowing the stack. */
const MAX_DEPTH = 200;

/**
 * Describes the first value in `value` that is not plain data, e.g. `"a function at .callback"`,
 * or returns `undefined` when all of it is plain data.
 */
export function findNonPlainData(value: unknown): string | undefined {
  const ancestors = new Set<object>();
  const walk = (item: unknown, path: string, depth: number): string | undefined => {
    switch (typeof item) {
      case "string":
      case "number":
      case "boolean":
      case "undefined":
        return undefined;
      case "function":
        return `a function at ${path || "the top level"}`;
      case "symbol":
        return `a symbol at ${path || "the top level"}`;
      case "bigint":
        return `a BigInt at ${path || "the top level"} (send it as a string or number)`;
      default:
        break;
    }
    if (item === null) return undefined;
    const obj = item as object;
    if (depth > MAX_DEPTH) return `a value nested deeper than ${MAX_DEPTH} levels at ${path}`;
    if (ancestors.has(obj)) return `a cycle at ${path || "the top level"}`;
    if (arrayIsArray(obj)) {
      ancestors.add(obj);
      for (let index = 0; index < obj.length; index++) {
        const problem = walk((obj as unknown[])[index], `${path}[${index}]`, depth + 1);
        if (problem !== undefined) return problem;
      }
      ancestors.delete(obj);
      return undefined;
    }
    const proto: unknown = getPrototypeOf(obj);
    if (proto === datePrototype) return undefined;
    if (proto !== objectPrototype && proto !== null) {
      return `${describeKind(obj)} at ${path || "the top level"} (only plain objects, arrays and primitives cross)`;
    }
    ancestors.add(obj);
    for (const key of objectKeys(obj)) {
      const descriptor = getOwnPropertyDescriptor(obj, key);
      const keyPath = `${path}.${key}`;
      if (descriptor === undefined) continue;
      if (descriptor.get !== undefined || descriptor.set !== undefined) return `a getter or setter at ${keyPath}`;
      const problem = walk(descriptor.value, keyPath, depth + 1);
      if (problem !== undefined) return problem;
    }
    ancestors.delete(obj);
    return undefined;
  };
  try {
    return walk(value, "", 0);
  } catch {
    return "a value that could not be inspected";
  }
}

function describeKind(obj: object): string {
  try {
    const ctor: unknown = (obj as { constructor?: unknown }).constructor;
    const name = typeof ctor === "function" ? ctor.name : "";
    return name ? `a ${name}` : "an object with a custom prototype";
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
