/**
 * Turns whatever a tool's `execute` returned into a `ToolExecutionResult`, or says why it
 * cannot. Never throws.
 *
 * Rules, in order:
 *
 * | returned value                         | result                                                         |
 * | -------------------------------------- | -------------------------------------------------------------- |
 * | `undefined`                            | invalid ("returned undefined")                                 |
 * | a result shape (see below)             | validated; blocks copied, `structuredContent` made plain JSON  |
 * | a string                               | `{ content: [{ type: "text", text: value }] }` (no structured) |
 * | a plain object                         | JSON text + `structuredContent` = a JSON copy of the object    |
 * | an array, number, boolean or `null`    | JSON text + `structuredContent` = `{ value }`                   |
 * | function, symbol, BigInt               | invalid                                                        |
 *
 * A *result shape* is an object whose keys are only `content`, `isError`, `structuredContent`
 * and `_meta` (the MCP `CallToolResult` keys) with `content` an array. Any other object is a
 * plain value, even if it has a `content` key. A result shape with a malformed block is
 * invalid rather than silently sent on as data. Each block is copied with its known fields,
 * each read once (so what was checked is what is kept; `annotations` and `_meta` are dropped):
 *
 * | block                                               | kept as                                   |
 * | --------------------------------------------------- | ----------------------------------------- |
 * | `{ type: "text", text }`                            | itself                                    |
 * | `{ type: "image" \| "audio", data, mimeType }`      | itself; `data` must be base64             |
 * | `{ type: "resource", uri, mimeType?, text? }`       | itself                                    |
 * | `{ type: "resource", resource: { uri, mimeType?, text } }` (MCP) | `{ type: "resource", uri, mimeType?, text }` |
 * | `{ type: "resource_link", uri, name, mimeType? }` (MCP) | `{ type: "resource", uri, mimeType? }` |
 *
 * A resource's `blob` (binary contents) is invalid: nothing downstream keeps a resource's bytes,
 * and dropping them would pass on a resource without its contents.
 *
 * Plain values follow `JSON.stringify` (object keys whose value is `undefined` are dropped,
 * `toJSON` is honoured, so a valid `Date` becomes its ISO string) except where JSON would lose
 * data without a word: cycles, BigInt, functions, symbols, non-finite numbers, `Map`, `Set`,
 * typed arrays, `ArrayBuffer`, `Promise`, `Error`, `RegExp`, `WeakRef`, boxed primitives
 * (`new String("x")`) and invalid dates anywhere in the value are invalid, and the reason
 * names the path (`$.rows[3].id`) and what to return instead. So are values nested deeper than
 * {@link MAX_RESULT_DEPTH} levels and results of more than {@link MAX_RESULT_VALUES} values.
 * @module
 */
import type { ContentBlock, ResourceBlock, ToolExecutionResult } from "../kernel/index.ts";
import { describeThrown, MAX_BLOB_MIME_TYPE_CHARS } from "../kernel/index.ts";
import { clipText } from "../kernel/bound-error-text.ts";
import { readErrorFields } from "../kernel/error-fields.ts";

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

/**
 * A copy of one content block in the shape the rest of the runtime reads (see the module's
 * table), or a {@link NotJson} naming the field at fault. Each field is read once.
 */
function checkBlock(block: unknown, path: string): ContentBlock {
  if (!isJsonObject(block)) throw new NotJson(`${path} is not a content block (an object with a "type").`);
  const type = block.type;
  switch (type) {
    case "text": {
      const text = block.text;
      if (typeof text === "string") return { type, text };
      throw new NotJson(`${path}: a text block needs a string "text".`);
    }
    case "image":
    case "audio": {
      const { data, mimeType } = block;
      if (typeof data !== "string" || typeof mimeType !== "string") {
        throw new NotJson(`${path}: an ${type} block needs base64 "data" and a "mimeType" string.`);
      }
      if (mimeType === "" || mimeType.length > MAX_BLOB_MIME_TYPE_CHARS) {
        throw new NotJson(`${path}.mimeType must be 1 to ${MAX_BLOB_MIME_TYPE_CHARS} characters (such as "image/png"); got ${mimeType.length}.`);
      }
      checkBase64(data, `${path}.data`);
      return { type, data, mimeType };
    }
    case "resource": {
      const resource = block.resource;
      if (resource === undefined) return resourceBlock(block, path);
      if (!isJsonObject(resource)) throw new NotJson(`${path}.resource is not an object ({ uri, text } as in MCP's embedded resources).`);
      return resourceBlock(resource, `${path}.resource`);
    }
    case "resource_link": {
      // A link carries no contents: only where the resource is, and what it is, are kept.
      const { uri, mimeType } = block;
      return resourceBlock({ uri, mimeType }, path);
    }
    default:
      throw new NotJson(`${path} has unknown block type ${JSON.stringify(type) ?? String(type)}; use text, image, audio, resource or resource_link.`);
  }
}

/** A resource block from `fields` (a flat block, MCP's nested `resource`, or a link's fields) found at `path`. */
function resourceBlock(fields: Record<string, unknown>, path: string): ResourceBlock {
  const { uri, mimeType, text, blob } = fields;
  if (blob !== undefined) {
    throw new NotJson(
      `${path}.blob: binary resource contents are not supported; return images and audio as image or audio blocks, ` +
        'or link the resource without its bytes ({ type: "resource_link", uri, name }).',
    );
  }
  if (typeof uri !== "string" || (mimeType !== undefined && typeof mimeType !== "string") || (text !== undefined && typeof text !== "string")) {
    throw new NotJson(`${path}: a resource needs a "uri" string (and string "mimeType"/"text" when given).`);
  }
  return { type: "resource", uri, ...(mimeType === undefined ? {} : { mimeType }), ...(text === undefined ? {} : { text }) };
}

/**
 * Base64 in the standard or URL-safe alphabet (Node decodes both), with at most two `=` of
 * padding at the end and no whitespace. One greedy class, so the test stays linear on a data
 * string of many MiB.
 */
const BASE64 = /^[\w+/-]*={0,2}$/;

/**
 * Throws a {@link NotJson} unless `data` is base64 that decodes to what it says: `Buffer.from`
 * skips any character it does not know and stores the rest, so a `data:` URL or other text
 * would become a file of garbage without a word.
 */
function checkBase64(data: string, path: string): void {
  if (data.startsWith("data:")) {
    throw new NotJson(`${path} is a data: URL; give only the base64 after "base64," (without the data: URL prefix), and its MIME type as "mimeType".`);
  }
  // Padded base64 comes in whole groups of 4 characters; unpadded, a last group of 1 character
  // is 6 bits, less than one byte.
  const padded = data.endsWith("=");
  if (!BASE64.test(data) || (padded ? data.length % 4 !== 0 : data.length % 4 === 1)) {
    throw new NotJson(`${path} is not base64; give the bytes as base64 (A-Z, a-z, 0-9, "+" and "/", "=" padding) without a data: URL prefix or line breaks.`);
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
  // Before toJSON: Date's own writes an invalid date as null, and an Error returned as data is a
  // failure the tool meant to report, even when its library gave it a toJSON.
  const lost = nonJsonReason(obj);
  if (lost !== undefined) throw new NotJson(`${path.toString()} is ${lost}`);
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

/** Longest part of a value (an Error's message, a RegExp) quoted in a reason, characters. */
const QUOTE_CHARS = 200;

const CONVERT = "convert it to plain objects or arrays.";

/** The wrappers of primitives, whose fields are not their value: `new String("ab")` has the keys "0" and "1", `new Number(1)` none. */
const BOXES = [String, Number, Boolean, BigInt, Symbol] as const;

/**
 * What `obj` is and what to return instead (the reason after "<path> is "), when `JSON.stringify`
 * would throw on it or lose it without a word (most become `{}`); `undefined` when its fields or
 * its `toJSON` are its JSON.
 */
function nonJsonReason(obj: object): string | undefined {
  if (obj instanceof Map) return `a Map; ${CONVERT}`;
  if (obj instanceof Set) return `a Set; ${CONVERT}`;
  if (obj instanceof WeakMap) return `a WeakMap; ${CONVERT}`;
  if (obj instanceof WeakSet) return `a WeakSet; ${CONVERT}`;
  if (obj instanceof Promise || typeof (obj as { then?: unknown }).then === "function") return "a Promise; did the tool forget an await?";
  if (ArrayBuffer.isView(obj)) return `a ${obj.constructor.name}; ${CONVERT}`;
  if (obj instanceof ArrayBuffer || obj instanceof SharedArrayBuffer) return `an ArrayBuffer; ${CONVERT}`;
  if (obj instanceof Error) return `${describeError(obj)}, which JSON writes as {}; throw it to report a failure, or return { message } instead.`;
  if (obj instanceof RegExp) return `a RegExp (${clipText(String(obj), QUOTE_CHARS)}), which JSON writes as {}; return its source string instead.`;
  if (obj instanceof WeakRef) return "a WeakRef, which JSON writes as {}; return the data it refers to (ref.deref()) instead.";
  if (obj instanceof Date && Number.isNaN(obj.getTime())) return "an invalid Date, which JSON writes as null; return a valid Date, or null for no date.";
  const boxed = BOXES.find((box) => obj instanceof box);
  if (boxed !== undefined) {
    return `a boxed ${boxed.name} (an object wrapping a primitive); return the primitive value instead.`;
  }
  return undefined;
}

/** "an Error (TypeError: \"bad input\")": its name and message, cut, as far as they can be read. */
function describeError(error: Error): string {
  const fields = readErrorFields(error);
  if (fields === "unreadable" || fields === undefined) return "an Error";
  const name = typeof fields.name === "string" && fields.name !== "" ? clipText(fields.name, QUOTE_CHARS) : "Error";
  const message = typeof fields.message === "string" && fields.message !== "" ? `: ${JSON.stringify(clipText(fields.message, QUOTE_CHARS))}` : "";
  return `an Error (${name}${message})`;
}
