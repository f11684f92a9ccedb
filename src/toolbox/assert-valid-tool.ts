/**
 * The shape check every tool passes before a toolbox holds it (and `defineTool` returns it).
 * Local tools need `name`, `description`, an object `inputSchema` and `execute`; hosted tools
 * need `providerSpecs` (an object of objects); provider-defined tools also need `callTypes` and
 * `handleCall`. Each failure names the field.
 *
 * Each field of the tool is read once, and the values read are what is checked and what
 * {@link readValidTool} hands back, so a getter or Proxy cannot pass the check with one value and
 * be kept with another. A field or schema that throws when read (a getter, a Proxy trap, a
 * revoked Proxy) is `TOOL_INVALID` too: isochain throws only `ChainRuntimeError`.
 *
 * A local tool's schemas are checked as far as a call would use them, so a tool that passes is
 * callable and its declarations render:
 * - both schemas are JSON data that JSON writes as it is, so the provider payloads (JSON), the
 *   declarations and ajv all see one schema: plain objects and arrays, strings, finite numbers,
 *   booleans and `null`; no `toJSON`, `Date` or class instance (JSON writes something else than
 *   what ajv reads), no `NaN` or `Infinity` (JSON writes null), no function, symbol or array
 *   hole (JSON drops them), no BigInt and no cycle (a recursive schema uses `$ref`), nesting
 *   objects and arrays at most {@link MAX_SCHEMA_DEPTH} deep (deeper ones used to overflow the
 *   stack in the declaration renderer and in ajv). Each refusal names the path;
 * - `inputSchema` compiles with the invoker's own ajv setup (`compileInputSchema`: draft-07,
 *   `nullable` only beside `type`, every `$ref` resolvable), whose compiled validator the
 *   invoker then reuses. Where ajv's reason names no place (a stack overflow from a loop of
 *   `$ref`s, "URI malformed" from a property name with a lone surrogate) the message adds it;
 * - no `required` (or `dependencies`) list of `inputSchema` names `"__proto__"`: the invoker
 *   drops `__proto__` keys from every argument object (one must never become a prototype), so
 *   no call could ever meet it. (An optional `__proto__` property is allowed; the declarations
 *   leave it out, since a script cannot pass it.)
 * @module
 */
import {
  ChainRuntimeError,
  describeThrown,
  isToolRisk,
  TOOL_NAME_PATTERN,
  type AnyTool,
  type HostedTool,
  type JsonSchema,
  type ObjectJsonSchema,
  type ProviderDefinedTool,
  type Tool,
} from "../kernel/index.ts";
import { clipText } from "../kernel/bound-error-text.ts";
import { compileInputSchema } from "./compile-input-schema.ts";

/**
 * Names that match {@link TOOL_NAME_PATTERN} but no tool may take, each with the reason. A chain
 * script sees its tools as the properties of one `tools` object (a null-prototype object, so
 * `constructor`, `__proto__`, `toString` and the like are ordinary names there):
 * - `then` would make `tools` a thenable, so `await tools`, `Promise.resolve(tools)` or
 *   returning it from an async function calls the tool with the promise's resolve functions
 *   as arguments: the call is spent and the await never settles.
 * (`toJSON`, `valueOf`, `toString` are called only when a script converts `tools` itself, and
 * what leaves the isolate is checked as plain data before any `toJSON` runs, so they are allowed.)
 */
const REFUSED_TOOL_NAMES: ReadonlyMap<string, string> = new Map([
  [
    "then",
    'cannot be "then": in a chain script it would make the `tools` object a thenable, so `await tools` (or returning `tools`) would call the tool and never settle. Rename the tool.',
  ],
]);

/**
 * How deep a tool's `inputSchema` or `outputSchema` may nest objects and arrays: 64 levels (the
 * schema object itself is level 1; `{ type: "object", properties: { a: { type: "string" } } }`
 * is 3). Far beyond what tools use, and well inside what ajv and the declaration renderer handle
 * (ajv's generated code grows with the square of the depth; both overflowed the stack at a few
 * thousand levels). Deeper schemas are refused with `TOOL_INVALID`.
 */
export const MAX_SCHEMA_DEPTH = 64;

/** Longest ajv reason, thrown message or schema path a `TOOL_INVALID` message quotes, characters. */
const MAX_REASON_CHARS = 1000;
/** Longest value or property name a `TOOL_INVALID` message quotes, characters. */
const MAX_QUOTE_CHARS = 200;

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Throws `TOOL_INVALID` for `field`; `name` is the tool's name as the check read it, if it is a string. */
function fail(field: string, message: string, name: string | undefined): never {
  const where = name === undefined ? "Tool" : `Tool "${name}"`;
  throw new ChainRuntimeError("TOOL_INVALID", `${where}: ${field} ${message}`, {
    details: { field, ...(name === undefined ? {} : { tool: name }) },
  });
}

/** The message after a field name for a value that threw when read (at `at`, a schema path, when known). */
function unreadable(error: unknown, at?: string): string {
  const place = at === undefined ? "" : ` at ${at}`;
  return `could not be read${place}: ${clipText(describeThrown(error), MAX_REASON_CHARS)} (a getter or Proxy trap threw; give plain data).`;
}

/**
 * `read()`, with anything it throws (a getter, a Proxy trap, a revoked Proxy) turned into
 * `TOOL_INVALID` for `field`: isochain throws only `ChainRuntimeError`.
 */
function readOrFail<T>(field: string, name: string | undefined, read: () => T): T {
  try {
    return read();
  } catch (error) {
    fail(field, unreadable(error), name);
  }
}

/** The fields of a local tool the check reads (and all `defineTool` takes). Each is read once; what was read is what is checked and kept. */
export const LOCAL_TOOL_FIELDS = ["name", "description", "inputSchema", "outputSchema", "risk", "deferLoading", "takesControl", "execute"] as const;
/** Every field the check reads, for a tool of any kind. */
const TOOL_FIELDS = [...LOCAL_TOOL_FIELDS, "providerSpecs", "callTypes", "handleCall"] as const;

type ToolFields = { -readonly [K in (typeof TOOL_FIELDS)[number]]?: unknown };

/**
 * Throws `ChainRuntimeError` `TOOL_INVALID` (with `details.field`) unless `tool` is a
 * well-formed local, hosted or provider-defined tool.
 */
export function assertValidTool(tool: unknown): asserts tool is AnyTool {
  readValidTool(tool);
}

/**
 * Checks `tool` as {@link assertValidTool} does and returns what it checked: a new plain object
 * with the tool's fields (those of its kind that are set), each read from `tool` once. A caller
 * that goes by these values (the name a toolbox keys the tool by, say) goes by what was checked,
 * even when `tool` has getters or is a Proxy that would answer differently the next time.
 */
export function readValidTool(tool: unknown): AnyTool {
  return check(tool, false);
}

/**
 * {@link readValidTool} for a local tool only: `handleCall`, `callTypes` and `providerSpecs` are
 * not read, and a missing `execute` is refused.
 */
export function readValidLocalTool(tool: unknown): Tool<never, unknown> {
  return check(tool, true) as Tool<never, unknown>;
}

/** The check itself; `localOnly` reads and accepts local tools only. */
function check(tool: unknown, localOnly: boolean): AnyTool {
  if (!readOrFail("tool", undefined, () => isPlainObject(tool))) fail("tool", "must be an object.", undefined);
  const t: ToolFields = {};
  for (const field of localOnly ? LOCAL_TOOL_FIELDS : TOOL_FIELDS) {
    t[field] = readOrFail(field, typeof t.name === "string" ? t.name : undefined, () => (tool as ToolFields)[field]);
  }
  const name = typeof t.name === "string" ? t.name : undefined;
  if (name === undefined || !TOOL_NAME_PATTERN.test(name)) {
    fail("name", `must match ${String(TOOL_NAME_PATTERN)}; got ${quoteValue(t.name) ?? typeof t.name}.`, name);
  }
  const refused = REFUSED_TOOL_NAMES.get(name);
  if (refused !== undefined) fail("name", refused, name);
  if (typeof t.description !== "string") fail("description", "must be a string.", name);
  const description = t.description;

  if (!localOnly && (t.handleCall !== undefined || t.callTypes !== undefined)) {
    const { providerSpecs, callTypes, handleCall } = t;
    assertProviderSpecs(providerSpecs, name);
    const callTypesOk = readOrFail("callTypes", name, () => Array.isArray(callTypes) && callTypes.every((c) => typeof c === "string" && c !== ""));
    if (!callTypesOk) fail("callTypes", "must be an array of non-empty strings.", name);
    if (typeof handleCall !== "function") fail("handleCall", "must be a function.", name);
    return { name, description, providerSpecs, callTypes, handleCall } as ProviderDefinedTool;
  }
  if (typeof t.execute !== "function") {
    if (!localOnly && t.providerSpecs !== undefined && t.execute === undefined) {
      assertProviderSpecs(t.providerSpecs, name);
      return { name, description, providerSpecs: t.providerSpecs } as HostedTool;
    }
    fail("execute", localOnly ? "must be a function." : "must be a function (or give providerSpecs for a hosted tool).", name);
  }

  const { inputSchema: schema, outputSchema } = t;
  if (!readOrFail("inputSchema", name, () => isPlainObject(schema))) fail("inputSchema", "must be a JSON Schema object.", name);
  const type = readOrFail("inputSchema", name, () => (schema as Record<string, unknown>).type);
  if (type !== "object") fail("inputSchema", `must have type "object"; got ${type === undefined ? "none" : (quoteValue(type) ?? typeof type)}.`, name);
  if (outputSchema !== undefined && !readOrFail("outputSchema", name, () => isPlainObject(outputSchema))) {
    fail("outputSchema", "must be a JSON Schema object when given.", name);
  }
  for (const [field, value] of [["inputSchema", schema], ["outputSchema", outputSchema]] as const) {
    if (value === undefined) continue;
    const problem = schemaProblem(value);
    if (problem !== undefined) fail(field, problem, name);
  }
  const inputSchema = schema as ObjectJsonSchema;
  const proto = readOrFail("inputSchema", name, () => requiresProtoKey(inputSchema));
  if (proto !== undefined) {
    fail(
      "inputSchema",
      `requires an argument named "__proto__" (at ${proto}), which no call can pass: the invoker drops "__proto__" keys from arguments so they never become a prototype. Rename the property.`,
      name,
    );
  }
  const compiled = compileInputSchema(inputSchema);
  if (!compiled.ok) {
    const reason = readOrFail("inputSchema", name, () => explainCompileFailure(inputSchema, compiled.reason));
    fail("inputSchema", `is not a valid JSON Schema (draft-07, as the invoker validates arguments): ${reason}.`, name);
  }
  const { risk, deferLoading, takesControl, execute } = t;
  if (risk !== undefined && !isToolRisk(risk)) fail("risk", `must be "safe", "high" or "critical"; got ${quoteValue(risk) ?? typeof risk}.`, name);
  if (deferLoading !== undefined && typeof deferLoading !== "boolean") fail("deferLoading", "must be a boolean when given.", name);
  if (takesControl !== undefined && typeof takesControl !== "boolean") fail("takesControl", "must be a boolean when given.", name);
  return {
    name,
    description,
    inputSchema,
    ...(outputSchema === undefined ? {} : { outputSchema: outputSchema as JsonSchema }),
    ...(risk === undefined ? {} : { risk }),
    ...(deferLoading === undefined ? {} : { deferLoading }),
    ...(takesControl === undefined ? {} : { takesControl }),
    execute: execute as Tool<never, unknown>["execute"],
  };
}

/** A refused value as JSON text for a message (cut), or `undefined` when JSON cannot write it (a BigInt, a throwing `toJSON`). */
function quoteValue(value: unknown): string | undefined {
  try {
    const text = JSON.stringify(value);
    return text === undefined ? undefined : clipText(text, MAX_QUOTE_CHARS);
  } catch {
    return undefined;
  }
}

function assertProviderSpecs(providerSpecs: unknown, name: string): void {
  if (!readOrFail("providerSpecs", name, () => isPlainObject(providerSpecs))) {
    fail("providerSpecs", "must be an object keyed by provider (a local tool needs an execute function instead).", name);
  }
  const specs = readOrFail("providerSpecs", name, () => Object.entries(providerSpecs as Record<string, unknown>));
  for (const [provider, spec] of specs) {
    if (!readOrFail(`providerSpecs.${provider}`, name, () => isPlainObject(spec))) fail(`providerSpecs.${provider}`, "must be an object.", name);
  }
}

/**
 * Why `schema` is not JSON data that JSON writes as it is (the message after the field name), or
 * `undefined`. JSON data here: plain objects (prototype `Object.prototype` or `null`) without
 * `toJSON` or non-enumerable properties, arrays without holes or extra properties, strings,
 * finite numbers, booleans and `null`; an object field may be `undefined` (JSON leaves it out,
 * and ajv and the declarations read it as absent). Anything else is written differently from
 * what ajv checks and the declarations show (a `toJSON`, a `Date`, `NaN`) or not at all (a
 * function), or cannot be written (a cycle, a BigInt). Also refuses nesting past
 * {@link MAX_SCHEMA_DEPTH}, and a value that throws when read. One walk, recursing at most
 * {@link MAX_SCHEMA_DEPTH} deep, so it never overflows the stack itself.
 */
function schemaProblem(schema: unknown): string | undefined {
  const keys: (string | number)[] = [];
  try {
    const problem = jsonProblem(schema, keys, new Set());
    if (problem === TOO_DEEP) {
      return `nests objects and arrays more than ${MAX_SCHEMA_DEPTH} levels deep (MAX_SCHEMA_DEPTH); flatten it, or use $ref and $defs.`;
    }
    return problem === undefined ? undefined : `must be JSON data (the model is shown it as JSON): ${pointerText(pointerOf(keys))} ${problem}.`;
  } catch (error) {
    // A throw ends the walk with `keys` at the value that threw.
    return unreadable(error, pointerText(pointerOf(keys)));
  }
}

const TOO_DEEP = "too deep";

/**
 * What is wrong with `value` (the text after its path; {@link TOO_DEEP} for nesting past
 * {@link MAX_SCHEMA_DEPTH}), or `undefined`. `keys` is the path from the root to `value`: on a
 * problem it is left at the value at fault; `ancestors` holds the objects above it.
 */
function jsonProblem(value: unknown, keys: (string | number)[], ancestors: Set<object>): string | undefined {
  switch (typeof value) {
    case "string":
    case "boolean":
      return undefined;
    case "number":
      return Number.isFinite(value) ? undefined : `is ${String(value)}, which JSON writes as null`;
    case "bigint":
      return "is a BigInt, which JSON cannot write; give a number";
    case "function":
    case "symbol":
      return `is a ${typeof value}, which JSON leaves out (or writes as null in an array)`;
    case "undefined":
      return "is undefined, which JSON writes as null in an array"; // object fields are skipped
    default:
      break;
  }
  if (value === null) return undefined;
  const obj = value as object;
  if (ancestors.has(obj)) return "refers back to one of its parents (a cycle); write a recursive schema with $ref and $defs";
  // The schema object itself is level 1.
  if (keys.length >= MAX_SCHEMA_DEPTH) return TOO_DEEP;
  ancestors.add(obj);
  const problem = Array.isArray(obj) ? arrayProblem(obj, keys, ancestors) : objectProblem(obj, keys, ancestors);
  ancestors.delete(obj);
  return problem;
}

/** {@link jsonProblem} for an array: no holes, no properties besides its items, and JSON items. */
function arrayProblem(list: readonly unknown[], keys: (string | number)[], ancestors: Set<object>): string | undefined {
  // Own keys list the indexes in order, then any other names: a hole shows as a missing index.
  // Read before the items, so a sparse array of length 2^32 - 1 is not walked slot by slot.
  const names = Object.keys(list);
  for (const [index, key] of names.entries()) {
    if (key === String(index)) continue;
    if (index < list.length) {
      keys.push(index);
      return "is an empty slot, which JSON writes as null";
    }
    return `has a property ${quoteKey(key)} besides its items, which JSON leaves out`;
  }
  if (names.length < list.length) {
    keys.push(names.length);
    return "is an empty slot, which JSON writes as null";
  }
  for (const [index, item] of list.entries()) {
    keys.push(index);
    const problem = jsonProblem(item, keys, ancestors);
    if (problem !== undefined) return problem;
    keys.pop();
  }
  return undefined;
}

/** {@link jsonProblem} for an object that is not an array: plain, no `toJSON`, every field enumerable and JSON. */
function objectProblem(obj: object, keys: (string | number)[], ancestors: Set<object>): string | undefined {
  const proto = Object.getPrototypeOf(obj) as object | null;
  // ajv reads keywords through the prototype chain (a class's getters, a Date's methods); JSON
  // writes own fields only, or whatever `toJSON` returns.
  if (proto !== Object.prototype && proto !== null) return `is ${describeObject(proto)}, not a plain object, so JSON would not write what ajv reads`;
  if (typeof (obj as { toJSON?: unknown }).toJSON === "function") {
    return "has a toJSON method, so JSON would write what it returns, not the schema ajv checks";
  }
  const names = Object.keys(obj);
  const all = Object.getOwnPropertyNames(obj);
  if (all.length !== names.length) {
    const shown = new Set(names);
    const hidden = all.find((key) => !shown.has(key)) ?? "";
    return `has a non-enumerable property ${quoteKey(hidden)}, which JSON leaves out and ajv reads`;
  }
  const record = obj as Record<string, unknown>;
  for (const key of names) {
    keys.push(key);
    const item = record[key];
    // JSON leaves an undefined field out; ajv and the declarations take it as absent.
    const problem = item === undefined ? undefined : jsonProblem(item, keys, ancestors);
    if (problem !== undefined) return problem;
    keys.pop();
  }
  return undefined;
}

/** "an instance of Date": what an object with prototype `proto` is, by the class `proto` belongs to. */
function describeObject(proto: object): string {
  // Only the prototype's own constructor names a class: `Object.create({ ... })` inherits Object's.
  const constructor: unknown = Object.hasOwn(proto, "constructor") ? (proto as { constructor?: unknown }).constructor : undefined;
  const name = typeof constructor === "function" ? constructor.name : "";
  if (typeof name === "string" && name !== "") return `an instance of ${clipText(name, MAX_QUOTE_CHARS)}`;
  // What `{ __proto__: { ... } }` makes: the literal key sets the prototype, it is no member.
  return 'an object with a custom prototype (a "__proto__" key written in an object literal sets the prototype: write it as ["__proto__"] to mean a member)';
}

/** A key as JSON text (a lone surrogate escaped), cut to a readable length. */
function quoteKey(key: string): string {
  return clipText(JSON.stringify(key), MAX_QUOTE_CHARS);
}

/** One JSON pointer segment (`~` and `/` escaped). */
function pointerSegment(key: string | number): string {
  return String(key).replaceAll("~", "~0").replaceAll("/", "~1");
}

/** The JSON pointer of the path `keys` from the schema's root. */
function pointerOf(keys: readonly (string | number)[]): string {
  return keys.map((key) => `/${pointerSegment(key)}`).join("");
}

/** A JSON pointer from the schema's root ("" for the root) as a message shows it: cut and well-formed. */
function pointerText(pointer: string): string {
  return pointer === "" ? "the root" : clipText(pointer, MAX_REASON_CHARS).toWellFormed();
}

/** Draft-07 keywords whose value is one subschema. */
const SUBSCHEMA_KEYWORDS = ["additionalItems", "additionalProperties", "contains", "propertyNames", "not", "if", "then", "else"];
/** Draft-07 keywords whose value is an array of subschemas. */
const SUBSCHEMA_LIST_KEYWORDS = ["allOf", "anyOf", "oneOf"];
/** Keywords whose value maps names to subschemas (`dependencies` also to lists of required names). */
const SUBSCHEMA_MAP_KEYWORDS = ["properties", "patternProperties", "definitions", "$defs", "dependencies"];

/**
 * The first answer `visit` gives for `schema` or one of its subschemas (depth first, `schema`
 * before its subschemas), each visited with its JSON pointer. Reads schema keywords only, not
 * data (`default`, `enum`, `const`, `examples`). Called after the depth check, so its recursion is bounded.
 */
function findInSubschemas(
  schema: unknown,
  pointer: string,
  visit: (schema: Record<string, unknown>, pointer: string) => string | undefined,
): string | undefined {
  if (!isPlainObject(schema)) return undefined;
  const found = visit(schema, pointer);
  if (found !== undefined) return found;
  for (const keyword of SUBSCHEMA_KEYWORDS) {
    const hit = findInSubschemas(schema[keyword], `${pointer}/${keyword}`, visit);
    if (hit !== undefined) return hit;
  }
  const items = schema.items;
  const itemList = Array.isArray(items) ? items : [items];
  for (const [index, item] of itemList.entries()) {
    const hit = findInSubschemas(item, Array.isArray(items) ? `${pointer}/items/${index}` : `${pointer}/items`, visit);
    if (hit !== undefined) return hit;
  }
  for (const keyword of SUBSCHEMA_LIST_KEYWORDS) {
    const list = schema[keyword];
    if (!Array.isArray(list)) continue;
    for (const [index, member] of list.entries()) {
      const hit = findInSubschemas(member, `${pointer}/${keyword}/${index}`, visit);
      if (hit !== undefined) return hit;
    }
  }
  for (const keyword of SUBSCHEMA_MAP_KEYWORDS) {
    const map = schema[keyword];
    if (!isPlainObject(map)) continue;
    for (const [key, member] of Object.entries(map)) {
      const hit = findInSubschemas(member, `${pointer}/${keyword}/${pointerSegment(key)}`, visit);
      if (hit !== undefined) return hit;
    }
  }
  return undefined;
}

/**
 * The JSON pointer of the first `required` list (or property dependency) in `schema` or its
 * subschemas that names `"__proto__"`, or `undefined`.
 */
function requiresProtoKey(schema: ObjectJsonSchema): string | undefined {
  return findInSubschemas(schema, "", (node, pointer) => {
    if (Array.isArray(node.required) && node.required.includes("__proto__")) return `${pointer}/required`;
    const dependencies = node.dependencies;
    if (!isPlainObject(dependencies)) return undefined;
    for (const [key, member] of Object.entries(dependencies)) {
      if (Array.isArray(member) && member.includes("__proto__")) return `${pointer}/dependencies/${pointerSegment(key)}`;
    }
    return undefined;
  });
}

/**
 * ajv's `reason` for refusing `schema`, with the place and likely cause added where ajv's own
 * message names neither: a stack overflow (ajv follows a `$ref` whose target is only a `$ref`
 * without end) and "URI malformed" (ajv cannot write a property name holding a lone surrogate
 * into a schema path).
 */
function explainCompileFailure(schema: ObjectJsonSchema, reason: string): string {
  if (reason.includes("Maximum call stack size exceeded")) {
    return (
      findInSubschemas(schema, "", refLoopFinder(schema)) ??
      `${reason}: ajv overflowed its stack compiling it; look for a $ref that leads back to itself through other $refs, ` +
        "or make the schema smaller (very long properties or anyOf/oneOf/allOf lists overflow it too)"
    );
  }
  if (reason.includes("URI malformed")) {
    return (
      findInSubschemas(schema, "", (node, pointer) => {
        for (const keyword of ["properties", "patternProperties"]) {
          const map = node[keyword];
          const name = isPlainObject(map) ? Object.keys(map).find((key) => !key.isWellFormed()) : undefined;
          if (name !== undefined) {
            return (
              `the property name ${quoteKey(name)} in ${pointerText(`${pointer}/${keyword}`)} holds a lone surrogate ` +
              `(half of a UTF-16 pair), which ajv cannot put in a schema path (${reason}); use well-formed Unicode`
            );
          }
        }
        return undefined;
      }) ?? `${reason} (likely a lone surrogate, half of a UTF-16 pair, in a property name, $id or $ref)`
    );
  }
  return clipText(reason, MAX_REASON_CHARS);
}

/**
 * A {@link findInSubschemas} visitor that finds a `$ref` leading into a loop: a chain of local
 * `$ref`s (`#/...`) whose targets are `$ref`s again, back to one already followed, which ajv
 * follows until its stack overflows. Schemas whose chain was followed to its end are remembered,
 * so every subschema is followed at most once in all.
 */
function refLoopFinder(root: ObjectJsonSchema): (schema: Record<string, unknown>, pointer: string) => string | undefined {
  const ends = new Set<object>();
  return (schema, pointer) => {
    const chain = new Set<object>();
    const refs: string[] = [];
    let current: unknown = schema;
    while (isPlainObject(current) && typeof current.$ref === "string" && !ends.has(current)) {
      if (chain.has(current)) {
        const into = current === schema ? "refers to itself in a loop" : "leads into a loop of $refs";
        const path = clipText(refs.join(" → "), MAX_REASON_CHARS).toWellFormed();
        return (
          `the $ref at ${pointerText(pointer)} ${into} (${path}), so ajv overflowed its stack following it; ` +
          "each $ref must end at a schema with keywords of its own"
        );
      }
      chain.add(current);
      refs.push(JSON.stringify(current.$ref));
      current = resolveLocalRef(root, current.$ref);
    }
    for (const link of chain) ends.add(link);
    return undefined;
  };
}

/** The value a local `$ref` (`#` or `#/a/b`, percent-encoded or not) points at in `root`, or `undefined`. */
function resolveLocalRef(root: ObjectJsonSchema, ref: string): unknown {
  if (ref === "#") return root;
  if (!ref.startsWith("#/")) return undefined;
  let pointer: string;
  try {
    pointer = decodeURIComponent(ref.slice(2));
  } catch {
    return undefined;
  }
  let target: unknown = root;
  for (const segment of pointer.split("/")) {
    const key = segment.replaceAll("~1", "/").replaceAll("~0", "~");
    if (typeof target !== "object" || target === null || !Object.hasOwn(target, key)) return undefined;
    target = (target as Record<string, unknown>)[key];
  }
  return target;
}
