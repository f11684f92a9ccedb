/**
 * The shape check every tool passes before a toolbox holds it (and `defineTool` returns it).
 * Local tools need `name`, `description`, an object `inputSchema` and `execute`; hosted tools
 * need `providerSpecs` (an object of objects); provider-defined tools also need `callTypes` and
 * `handleCall`. Each failure names the field.
 * @module
 */
import { ChainRuntimeError, describeThrown, isToolRisk, type AnyTool } from "../kernel/index.ts";

/**
 * What a tool name may look like: a letter or `_`, then up to 63 letters, digits, `_`, `.` or
 * `-`. Note that OpenAI and Anthropic accept neither `.` nor a leading digit in function names;
 * the provider encoders drop (and report) local tools whose names the provider would reject.
 */
export const TOOL_NAME_PATTERN: RegExp = /^[A-Za-z_][A-Za-z0-9_.-]{0,63}$/;

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
    const problem = t[field] === undefined ? undefined : notJson(t[field]);
    if (problem !== undefined) fail(field, `must be JSON data (the model is shown it as JSON): ${problem}.`, tool);
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

/** Why `schema` cannot be written as JSON (a cycle: recursive schemas use `$ref` / `$defs`), or `undefined`. */
function notJson(schema: unknown): string | undefined {
  try {
    JSON.stringify(schema);
    return undefined;
  } catch (error) {
    if (error instanceof TypeError && /circular/i.test(error.message)) return "it refers back to itself; write a recursive schema with $ref and $defs";
    return describeThrown(error);
  }
}
