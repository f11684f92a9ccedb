/**
 * The shape check every tool passes before a toolbox holds it (and `defineTool` returns it).
 * Local tools need `name`, `description`, an object `inputSchema` and `execute`; hosted tools
 * need `providerSpecs` (an object of objects); provider-defined tools also need `callTypes` and
 * `handleCall`. Each failure names the field.
 *
 * A local tool's schemas are checked as far as a call would use them, so a tool that passes is
 * callable and its declarations render:
 * - both schemas are JSON data (no cycles: a recursive schema uses `$ref`) nesting objects and
 *   arrays at most {@link MAX_SCHEMA_DEPTH} deep (deeper ones used to overflow the stack in the
 *   declaration renderer and in ajv);
 * - `inputSchema` compiles with the invoker's own ajv setup (`compileInputSchema`: draft-07,
 *   `nullable` only beside `type`, every `$ref` resolvable), whose compiled validator the
 *   invoker then reuses;
 * - no `required` (or `dependencies`) list of `inputSchema` names `"__proto__"`: the invoker
 *   drops `__proto__` keys from every argument object (one must never become a prototype), so
 *   no call could ever meet it. (An optional `__proto__` property is allowed; the declarations
 *   leave it out, since a script cannot pass it.)
 * @module
 */
import { ChainRuntimeError, describeThrown, isToolRisk, type AnyTool } from "../kernel/index.ts";
import { clipText } from "../kernel/bound-error-text.ts";
import { compileInputSchema } from "./compile-input-schema.ts";

/**
 * What a tool name may look like: a letter or `_`, then up to 63 letters, digits, `_`, `.` or
 * `-`. Note that OpenAI and Anthropic accept neither `.` nor a leading digit in function names;
 * the provider encoders drop (and report) local tools whose names the provider would reject.
 */
export const TOOL_NAME_PATTERN: RegExp = /^[A-Za-z_][A-Za-z0-9_.-]{0,63}$/;

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

/** Longest ajv reason a `TOOL_INVALID` message quotes, characters. */
const MAX_REASON_CHARS = 1000;

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function fail(field: string, message: string, tool: unknown): never {
  const name = isPlainObject(tool) && typeof tool.name === "string" ? tool.name : undefined;
  const where = name === undefined ? "Tool" : `Tool "${name}"`;
  throw new ChainRuntimeError("TOOL_INVALID", `${where}: ${field} ${message}`, {
    details: { field, ...(name === undefined ? {} : { tool: name }) },
  });
}

/**
 * Throws `ChainRuntimeError` `TOOL_INVALID` (with `details.field`) unless `tool` is a
 * well-formed local, hosted or provider-defined tool.
 */
export function assertValidTool(tool: unknown): asserts tool is AnyTool {
  if (!isPlainObject(tool)) fail("tool", "must be an object.", tool);
  const t = tool as Record<string, unknown>;
  if (typeof t.name !== "string" || !TOOL_NAME_PATTERN.test(t.name)) {
    fail("name", `must match ${String(TOOL_NAME_PATTERN)}; got ${JSON.stringify(t.name) ?? String(t.name)}.`, tool);
  }
  const refused = REFUSED_TOOL_NAMES.get(t.name);
  if (refused !== undefined) fail("name", refused, tool);
  if (typeof t.description !== "string") fail("description", "must be a string.", tool);

  if (t.handleCall !== undefined || t.callTypes !== undefined) {
    assertProviderSpecs(t, tool);
    if (!Array.isArray(t.callTypes) || !t.callTypes.every((c) => typeof c === "string" && c !== "")) {
      fail("callTypes", "must be an array of non-empty strings.", tool);
    }
    if (typeof t.handleCall !== "function") fail("handleCall", "must be a function.", tool);
    return;
  }
  if (typeof t.execute !== "function") {
    if (t.providerSpecs !== undefined && t.execute === undefined) {
      assertProviderSpecs(t, tool);
      return;
    }
    fail("execute", "must be a function (or give providerSpecs for a hosted tool).", tool);
  }

  const schema = t.inputSchema;
  if (!isPlainObject(schema)) fail("inputSchema", "must be a JSON Schema object.", tool);
  if (schema.type !== "object") fail("inputSchema", `must have type "object"; got ${JSON.stringify(schema.type) ?? "none"}.`, tool);
  if (t.outputSchema !== undefined && !isPlainObject(t.outputSchema)) fail("outputSchema", "must be a JSON Schema object when given.", tool);
  for (const field of ["inputSchema", "outputSchema"] as const) {
    if (t[field] === undefined) continue;
    const shape = shapeProblem(t[field], 1, new Set());
    if (shape === "cycle") fail(field, `must be JSON data (the model is shown it as JSON): ${CYCLE}.`, tool);
    if (shape === "too-deep") {
      fail(field, `nests objects and arrays more than ${MAX_SCHEMA_DEPTH} levels deep (MAX_SCHEMA_DEPTH); flatten it, or use $ref and $defs.`, tool);
    }
    const problem = notJson(t[field]);
    if (problem !== undefined) fail(field, `must be JSON data (the model is shown it as JSON): ${problem}.`, tool);
  }
  const proto = requiresProtoKey(schema, "");
  if (proto !== undefined) {
    fail(
      "inputSchema",
      `requires an argument named "__proto__" (at ${proto}), which no call can pass: the invoker drops "__proto__" keys from arguments so they never become a prototype. Rename the property.`,
      tool,
    );
  }
  const compiled = compileInputSchema(schema);
  if (!compiled.ok) {
    fail("inputSchema", `is not a valid JSON Schema (draft-07, as the invoker validates arguments): ${clipText(compiled.reason, MAX_REASON_CHARS)}.`, tool);
  }
  if (t.risk !== undefined && !isToolRisk(t.risk)) fail("risk", `must be "safe", "high" or "critical"; got ${JSON.stringify(t.risk)}.`, tool);
  if (t.deferLoading !== undefined && typeof t.deferLoading !== "boolean") fail("deferLoading", "must be a boolean when given.", tool);
  if (t.takesControl !== undefined && typeof t.takesControl !== "boolean") fail("takesControl", "must be a boolean when given.", tool);
}

function assertProviderSpecs(t: Record<string, unknown>, tool: unknown): void {
  if (!isPlainObject(t.providerSpecs)) {
    fail("providerSpecs", "must be an object keyed by provider (a local tool needs an execute function instead).", tool);
  }
  for (const [provider, spec] of Object.entries(t.providerSpecs)) {
    if (!isPlainObject(spec)) fail(`providerSpecs.${provider}`, "must be an object.", tool);
  }
}

const CYCLE = "it refers back to itself; write a recursive schema with $ref and $defs";

/**
 * Whether `value` (at nesting level `depth`) holds a cycle or nests objects and arrays past
 * {@link MAX_SCHEMA_DEPTH}. Recurses at most that deep, so it never overflows the stack itself.
 */
function shapeProblem(value: unknown, depth: number, ancestors: Set<object>): "cycle" | "too-deep" | undefined {
  if (typeof value !== "object" || value === null) return undefined;
  if (ancestors.has(value)) return "cycle";
  if (depth > MAX_SCHEMA_DEPTH) return "too-deep";
  ancestors.add(value);
  for (const child of Object.values(value)) {
    const problem = shapeProblem(child, depth + 1, ancestors);
    if (problem !== undefined) return problem;
  }
  ancestors.delete(value);
  return undefined;
}

/** Why `schema` cannot be written as JSON, or `undefined`. */
function notJson(schema: unknown): string | undefined {
  try {
    JSON.stringify(schema);
    return undefined;
  } catch (error) {
    if (error instanceof TypeError && /circular/i.test(error.message)) return CYCLE;
    return describeThrown(error);
  }
}

/** Draft-07 keywords whose value is one subschema. */
const SUBSCHEMA_KEYWORDS = ["additionalItems", "additionalProperties", "contains", "propertyNames", "not", "if", "then", "else"];
/** Draft-07 keywords whose value is an array of subschemas. */
const SUBSCHEMA_LIST_KEYWORDS = ["allOf", "anyOf", "oneOf"];
/** Keywords whose value maps names to subschemas (`dependencies` also to lists of required names). */
const SUBSCHEMA_MAP_KEYWORDS = ["properties", "patternProperties", "definitions", "$defs", "dependencies"];

/**
 * The JSON pointer of the first `required` list (or property dependency) in `schema` or its
 * subschemas that names `"__proto__"`, or `undefined`. Reads schema keywords only, not data
 * (`default`, `enum`, `const`, `examples`). Called after the depth check, so its recursion is bounded.
 */
function requiresProtoKey(schema: unknown, pointer: string): string | undefined {
  if (!isPlainObject(schema)) return undefined;
  if (Array.isArray(schema.required) && schema.required.includes("__proto__")) return `${pointer}/required`;
  for (const keyword of SUBSCHEMA_KEYWORDS) {
    const hit = requiresProtoKey(schema[keyword], `${pointer}/${keyword}`);
    if (hit !== undefined) return hit;
  }
  const items = schema.items;
  const itemList = Array.isArray(items) ? items : [items];
  for (const [index, item] of itemList.entries()) {
    const hit = requiresProtoKey(item, Array.isArray(items) ? `${pointer}/items/${index}` : `${pointer}/items`);
    if (hit !== undefined) return hit;
  }
  for (const keyword of SUBSCHEMA_LIST_KEYWORDS) {
    const list = schema[keyword];
    if (!Array.isArray(list)) continue;
    for (const [index, member] of list.entries()) {
      const hit = requiresProtoKey(member, `${pointer}/${keyword}/${index}`);
      if (hit !== undefined) return hit;
    }
  }
  for (const keyword of SUBSCHEMA_MAP_KEYWORDS) {
    const map = schema[keyword];
    if (!isPlainObject(map)) continue;
    for (const [key, member] of Object.entries(map)) {
      const at = `${pointer}/${keyword}/${key.replaceAll("~", "~0").replaceAll("/", "~1")}`;
      if (keyword === "dependencies" && Array.isArray(member) && member.includes("__proto__")) return at;
      const hit = requiresProtoKey(member, at);
      if (hit !== undefined) return hit;
    }
  }
  return undefined;
}
