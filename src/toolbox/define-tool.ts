/**
 * `defineTool`: a local tool from a JSON Schema literal, with `execute`'s arguments (and, when
 * an `outputSchema` is given, its return value) typed from the schemas. The definition is
 * checked at call time, so a malformed tool fails where it is written, not on first use.
 * @module
 */
import { editDistance } from "../kernel/suggest-names.ts";
import { ChainRuntimeError, type JsonSchema, type ObjectJsonSchema, type Tool, type ToolContext, type ToolExecutionResult, type ToolRisk } from "../kernel/index.ts";
import { LOCAL_TOOL_FIELDS, readValidLocalTool } from "./assert-valid-tool.ts";
import type { FromSchema } from "./from-schema.ts";

/**
 * The plain value `execute` may return besides a `ToolExecutionResult`: anything without an
 * `outputSchema`; with one, a value of that schema's type.
 */
export type ToolOutput<O> = [O] extends [undefined] ? unknown : FromSchema<O>;

/** The input of {@link defineTool}. */
export interface ToolDefinition<S extends ObjectJsonSchema, O extends JsonSchema | undefined = undefined> {
  /** Unique in a toolbox; see `TOOL_NAME_PATTERN` (and not `"then"`). */
  readonly name: string;
  /** What the tool does, for the model. */
  readonly description: string;
  /** JSON Schema of the arguments (type "object"); types `execute`'s `args`. */
  readonly inputSchema: S;
  /** JSON Schema of the result's structured content; types `execute`'s return value. */
  readonly outputSchema?: O;
  /** How much harm a call can do; above the policy's `maxRiskUnapproved` a call needs approval. @defaultValue `"safe"` */
  readonly risk?: ToolRisk;
  /** Left out of the first schema list. @defaultValue false */
  readonly deferLoading?: boolean;
  /** The tool hands the turn over and must be called alone. @defaultValue false */
  readonly takesControl?: boolean;
  /** Runs the tool. Arguments were validated against `inputSchema` by the invoker. */
  execute(
    args: FromSchema<S>,
    ctx: ToolContext,
  ): Promise<ToolExecutionResult | NoInfer<ToolOutput<O>>> | ToolExecutionResult | NoInfer<ToolOutput<O>>;
}

/**
 * Defines a local tool. The schemas are `const` type parameters, so literals keep their types
 * without `as const`:
 *
 * ```ts
 * const search = defineTool({
 *   name: "search",
 *   description: "Search the docs.",
 *   inputSchema: { type: "object", properties: { q: { type: "string" } }, required: ["q"] },
 *   execute: async ({ q }) => ({ hits: [q] }), // q: string
 * });
 * ```
 *
 * Returns a new object with `risk` filled in, holding the values the check read (each field of
 * `definition` is read once; `execute` runs with `definition` as `this`). Its fields are
 * read-only, so a tool a toolbox has checked and keyed by name cannot be renamed or given an
 * unchecked schema; the object is not frozen, so `brandChainTool` can still mark it. Its
 * schemas are read once per tool, by the invoker's argument validator and by trace
 * fingerprints: change a tool by defining a new one, not by editing its schema objects in place.
 * Throws `ChainRuntimeError` `TOOL_INVALID` naming the field when the name does not match
 * `TOOL_NAME_PATTERN` or is `"then"` (which would make a chain script's `tools` object a
 * thenable), the description is not a string, `inputSchema` is not an object schema
 * of type "object" that the invoker's ajv setup compiles (draft-07; a `"strng"` type, a
 * `$ref` to nothing or `nullable` without `type` are refused here, not at the first call),
 * `inputSchema` requires a `"__proto__"` argument (which no call can pass), a schema is not
 * JSON data that JSON writes as it is (a `toJSON`, a `Date` or class instance, `NaN`, a
 * function, a hole in an array, a cycle) or nests deeper than `MAX_SCHEMA_DEPTH`, a field throws
 * when read (a getter or Proxy trap), `execute` is not a function,
 * `risk`/`deferLoading`/`takesControl` has the wrong type, or the definition has a field a tool
 * does not whose name is close to one it has (`riskLevel`, `riks`: a misspelt `risk` would leave
 * the tool `"safe"`). Other fields of its own are the author's, e.g. state `execute` reads.
 */
export function defineTool<const S extends ObjectJsonSchema, const O extends JsonSchema | undefined = undefined>(
  definition: ToolDefinition<S, O>,
): Tool<FromSchema<S>, ToolOutput<O>> {
  const { name, description, inputSchema, outputSchema, risk, deferLoading, takesControl, execute } = readValidLocalTool(
    definition,
  ) as unknown as ToolDefinition<S, O>;
  // Checked once the fields are (a definition that is no object is refused there): a misspelt
  // field is not ignored, least of all `risk`, whose slip would leave a dangerous tool "safe".
  // Only slips: other fields are the author's own (state `execute` reads through `this`).
  refuseMisspeltFields(definition, name);
  const tool: Tool<FromSchema<S>, ToolOutput<O>> = {
    name,
    description,
    inputSchema,
    ...(outputSchema === undefined ? {} : { outputSchema }),
    risk: risk ?? "safe",
    ...(deferLoading === undefined ? {} : { deferLoading }),
    ...(takesControl === undefined ? {} : { takesControl }),
    execute: (args, ctx) => execute.call(definition, args, ctx),
  };
  // Read-only, not frozen: a toolbox keys the tool by the name it checked, and a rename (or a new
  // schema) afterwards would be declared and sent unchecked; `brandChainTool` still adds its mark.
  for (const key of Object.keys(tool)) Object.defineProperty(tool, key, { writable: false, configurable: false });
  return tool;
}

/** Throws `TOOL_INVALID` for an own field of `definition` that is a slip of a tool field's name (see {@link slipOf}). */
function refuseMisspeltFields(definition: object, name: string): void {
  let keys: string[];
  try {
    keys = Object.keys(definition);
  } catch {
    return; // keys that cannot be listed (a Proxy): the fields read above are what counts
  }
  for (const key of keys) {
    const meant = slipOf(key);
    if (meant === undefined) continue;
    throw new ChainRuntimeError(
      "TOOL_INVALID",
      `Tool ${JSON.stringify(name)}: defineTool() has no field ${JSON.stringify(key)}; did you mean ${meant}? (fields: ${LOCAL_TOOL_FIELDS.join(", ")}).`,
      { details: { field: key, tool: name } },
    );
  }
}

/**
 * The tool field `key` is a slip of, if it is one: the same name in other case or with `_`/`-`
 * (`Risk`, `input_schema`), two neighbouring letters swapped (`riks`), `risk` with more after it
 * (`riskLevel`, `risk_level`), or one letter off a name of 7 or more (`descripton`). Close
 * names of other words stay the author's own fields (`rate`, `disk`, `note`, `client`): only
 * these slips are refused, so state `execute` reads through `this` keeps any other name.
 */
function slipOf(key: string): string | undefined {
  if ((LOCAL_TOOL_FIELDS as readonly string[]).includes(key)) return undefined;
  const plain = normalized(key);
  for (const field of LOCAL_TOOL_FIELDS) {
    const target = normalized(field);
    if (plain === target || isSwap(plain, target)) return field;
    if (field === "risk" && plain.startsWith("risk")) return field;
    if (target.length >= 7 && editDistance(plain, target, 1) <= 1) return field;
  }
  return undefined;
}

function normalized(name: string): string {
  return name.toLowerCase().replace(/[_-]/gu, "");
}

/** True when `a` is `b` with two neighbouring characters swapped. */
function isSwap(a: string, b: string): boolean {
  if (a.length !== b.length) return false;
  let at = -1;
  for (let i = 0; i < a.length; i++) {
    if (a[i] === b[i]) continue;
    if (at !== -1) return i === at + 1 && a[at] === b[i] && a[i] === b[at] && a.slice(i + 1) === b.slice(i + 1);
    at = i;
  }
  return false;
}
