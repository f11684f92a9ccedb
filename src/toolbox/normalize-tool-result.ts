/**
 * Turns whatever a tool's `execute` returned into a `ToolExecutionResult`, or says why it
 * cannot. Never throws.
 *
 * Rules, in order:
 *
 * | returned value                         | result                                                         |
 * | -------------------------------------- | -------------------------------------------------------------- |
 * | `undefined`                            | invalid ("returned undefined")                                 |
 * | a result shape (see below)             | validated; blocks kept, `structuredContent` made plain JSON    |
 * | a string                               | `{ content: [{ type: "text", text: value }] }` (no structured) |
 * | a plain object                         | JSON text + `structuredContent` = a JSON copy of the object    |
 * | an array, number, boolean or `null`    | JSON text + `structuredContent` = `{ value }`                   |
 * | function, symbol, BigInt               | invalid                                                        |
 *
 * A *result shape* is an object whose keys are only `content`, `isError`, `structuredContent`
 * and `_meta` (the MCP `CallToolResult` keys) with `content` an array. Any other object is a
 * plain value, even if it has a `content` key. A result shape with a malformed block is
 * invalid rather than silently sent on as data.
 *
 * Plain values follow `JSON.stringify` (object keys whose value is `undefined` are dropped,
 * `toJSON` is honoured, so a `Date` becomes its ISO string) except where JSON would lose data
 * without a word: cycles, BigInt, functions, symbols, non-finite numbers, `Map`, `Set`,
 * typed arrays, `ArrayBuffer` and `Promise` anywhere in the value are invalid, and the reason
 * names the path (`$.rows[3].id`). So are values nested deeper than {@link MAX_RESULT_DEPTH}
 * levels and results of more than {@link MAX_RESULT_VALUES} values.
 * @module
 */
import type { ContentBlock, ToolExecutionResult } from "../kernel/index.ts";
import { describeThrown } from "../kernel/index.ts";

/** The outcome of {@link normalizeToolResult}. */
export type NormalizedToolResult =
  | {
      readonly ok: true;
      readonly result: ToolExecutionResult;
      /** The JSON text of `result.structuredContent`, when it was made here (it is then also the text block). */
      readonly structuredJson?: string;
    }
  | { readonly ok: false; readonly reason: string };

const RESULT_KEYS = new Set(["content", "isError", "structuredContent", "_meta"]);

/** Thrown inside the walk only; caught by {@link normalizeToolResult}. */
class NotJson {
  readonly reason: string;
  constructor(reason: string) {
    this.reason = reason;
  }
}

/**
 * Normalises the value a tool's `execute` resolved to. Returns `{ ok: false, reason }` for a
 * value that is not a result (the invoker turns it into `RESULT_INVALID`); never throws.
 */
export function normalizeToolResult(value: unknown): NormalizedToolResult {
  try {
    if (value === undefined) {
      return { ok: false, reason: "the tool returned undefined; return a value (or { content: [] } for nothing)." };
    }
    if (typeof value === "string") return { ok: true, result: { content: [{ type: "text", text: value }] } };
    if (isResultShape(value)) return { ok: true, result: checkResultShape(value) };
    const json = toJson(value, new JsonPath("$"), new Walk());
    const text = JSON.stringify(json);
    if (isJsonObject(json)) return { ok: true, result: { content: [{ type: "text", text }], structuredContent: json }, structuredJson: text };
    return { ok: true, result: { content: [{ type: "text", text }], structuredContent: { value: json } } };
  } catch (error) {
    if (error instanceof NotJson) return { ok: false, reason: error.reason };
    return { ok: false, reason: `the tool's result could not be read: ${describeThrown(error)}` };
  }
}

function isJsonObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function isResultShape(value: unknown): value is Record<string, unknown> {
  if (!isJsonObject(value) || !Array.isArray(value.content)) return false;
  return Object.keys(value).every((key) => RESULT_KEYS.has(key));
}

function checkResultShape(value: Record<string, unknown>): ToolExecutionResult {
  new Walk().spend((value.content as unknown[]).length, new JsonPath("$.content"));
  const content = (value.content as unknown[]).map((block, index) => checkBlock(block, `content[${index}]`));
  if (value.isError !== undefined && typeof value.isError !== "boolean") {
    throw new NotJson(`isError must be a boolean; got ${typeof value.isError}.`);
  }
  let structuredContent: Record<string, unknown> | undefined;
  if (value.structuredContent !== undefined) {
    const json = toJson(value.structuredContent, new JsonPath("$.structuredContent"), new Walk());
    if (!isJsonObject(json)) throw new NotJson("structuredContent must be a JSON object (not an array or primitive).");
    structuredContent = json;
  }
  return {
    content,
    ...(value.isError === undefined ? {} : { isError: value.isError }),
    ...(structuredContent === undefined ? {} : { structuredContent }),
  };
}

function checkBlock(block: unknown, path: string): ContentBlock {
  if (!isJsonObject(block)) throw new NotJson(`${path} is not a content block (an object with a "type").`);
  const str = (key: string): boolean => typeof block[key] === "string";
  const optStr = (key: string): boolean => block[key] === undefined || typeof block[key] === "string";
  switch (block.type) {
    case "text":
      if (str("text")) return block as unknown as ContentBlock;
      throw new NotJson(`${path}: a text block needs a string "text".`);
    case "image":
    case "audio":
      if (str("data") && str("mimeType")) return block as unknown as ContentBlock;
      throw new NotJson(`${path}: an ${block.type} block needs base64 "data" and a "mimeType" string.`);
    case "resource":
      if (str("uri") && optStr("mimeType") && optStr("text")) return block as unknown as ContentBlock;
      throw new NotJson(`${path}: a resource block needs a "uri" string (and string "mimeType"/"text" when given).`);
    default:
      throw new NotJson(`${path} has unknown block type ${JSON.stringify(block.type) ?? String(block.type)}; use text, image, audio or resource.`);
  }
}

/**
 * Most values (array items and object fields, at every level) one result may hold: ten million,
 * far above any result a blob store would keep and far below what the host's heap can copy
 * (a sparse array of length 2^32 - 1 used to be walked slot by slot until V8 aborted).
 */
export const MAX_RESULT_VALUES = 10_000_000;

/**
 * Deepest nesting of objects and arrays in one result (the top level is level 0): 200, the bound
 * a script's own return value has. Anything deeper is refused before code that walks values
 * recursively (the trace's encoder, the isolate's copy) could overflow its stack on it.
 */
export const MAX_RESULT_DEPTH = 200;

/** The state of one {@link toJson} walk: the objects above the current one and the values left. */
class Walk {
  readonly ancestors = new Set<object>();
  #left = MAX_RESULT_VALUES;

  /** Counts `count` more values, or throws {@link NotJson} past {@link MAX_RESULT_VALUES}. */
  spend(count: number, path: JsonPath): void {
    this.#left -= count;
    if (this.#left < 0) {
      throw new NotJson(
        `${path.toString()} takes the result past ${MAX_RESULT_VALUES} values (array items and object fields in all); ` +
          "return less data, or write it to a file or blob and return a reference.",
      );
    }
  }
}

const IDENTIFIER = /^[A-Za-z_$][\w$]*$/;

/**
 * Where the walk of {@link toJson} is: a root label and the keys and indexes below it. Kept as a
 * stack and written out only for an error message, so a valid value costs no path strings.
 */
class JsonPath {
  readonly #root: string;
  readonly parts: (string | number)[] = [];

  constructor(root: string) {
    this.#root = root;
  }

  toString(): string {
    let out = this.#root;
    for (const part of this.parts) {
      out += typeof part === "number" ? `[${part}]` : IDENTIFIER.test(part) ? `.${part}` : `[${JSON.stringify(part)}]`;
    }
    return out;
  }
}

/**
 * A plain-JSON copy of `value`, or a {@link NotJson} naming the first offending path. A throw
 * ends the whole walk, so `path` is not unwound on the way out.
 */
function toJson(value: unknown, path: JsonPath, walk: Walk): unknown {
  switch (typeof value) {
    case "string":
    case "boolean":
      return value;
    case "number":
      if (Number.isFinite(value)) return value;
      throw new NotJson(`${path.toString()} is ${String(value)}, which JSON cannot hold.`);
    case "bigint":
      throw new NotJson(`${path.toString()} is a BigInt (${value.toString()}n); convert it to a number or string.`);
    case "function":
      throw new NotJson(`${path.toString()} is a function; results must be JSON data.`);
    case "symbol":
      throw new NotJson(`${path.toString()} is a symbol; results must be JSON data.`);
    case "undefined":
      return null; // only reached for array items: JSON writes them as null
    default:
      break;
  }
  if (value === null) return null;
  const obj = value as object;
  const ancestors = walk.ancestors;
  if (ancestors.has(obj)) throw new NotJson(`${path.toString()} refers back to one of its parents (a cycle); JSON cannot hold it.`);
  const kind = nonJsonKind(obj);
  if (kind !== undefined) {
    throw new NotJson(`${path.toString()} is a ${kind}; ${kind === "Promise" ? "did the tool forget an await?" : "convert it to plain objects or arrays."}`);
  }
  const toJSON = (obj as { toJSON?: unknown }).toJSON;
  if (typeof toJSON === "function") return toJson(toJSON.call(obj, ""), path, walk);
  const parts = path.parts;
  if (parts.length > MAX_RESULT_DEPTH) {
    throw new NotJson(`${path.toString().slice(0, 120)}… is nested deeper than ${MAX_RESULT_DEPTH} levels; return flatter data, or write it to a file or blob and return a reference.`);
  }
  ancestors.add(obj);
  if (Array.isArray(obj)) {
    const length = obj.length;
    // Checked before the copy is allocated: `rows.length = 2 ** 32 - 1` is one property.
    walk.spend(length, path);
    const out: unknown[] = new Array<unknown>(length);
    for (let index = 0; index < length; index++) {
      parts.push(index);
      out[index] = toJson(obj[index], path, walk);
      parts.pop();
    }
    ancestors.delete(obj);
    return out;
  }
  const out: Record<string, unknown> = {};
  const keys = Object.keys(obj);
  walk.spend(keys.length, path);
  for (const key of keys) {
    const field = (obj as Record<string, unknown>)[key];
    if (field === undefined) continue;
    parts.push(key);
    const item = toJson(field, path, walk);
    parts.pop();
    // An own "__proto__" key must stay data: assignment would swap the copy's prototype.
    if (key === "__proto__") Object.defineProperty(out, key, { value: item, enumerable: true, writable: true, configurable: true });
    else out[key] = item;
  }
  ancestors.delete(obj);
  return out;
}

function nonJsonKind(obj: object): string | undefined {
  if (obj instanceof Map) return "Map";
  if (obj instanceof Set) return "Set";
  if (obj instanceof WeakMap) return "WeakMap";
  if (obj instanceof WeakSet) return "WeakSet";
  if (obj instanceof Promise || typeof (obj as { then?: unknown }).then === "function") return "Promise";
  if (ArrayBuffer.isView(obj)) return obj.constructor.name;
  if (obj instanceof ArrayBuffer || obj instanceof SharedArrayBuffer) return "ArrayBuffer";
  return undefined;
}
