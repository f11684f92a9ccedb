/**
 * `compileInputSchema`: the one ajv setup that checks tool arguments, shared by the tool check
 * (`assertValidTool` refuses an `inputSchema` it cannot compile) and the invoker
 * (`ArgumentValidator` validates every call with the function it returns). One setup, so a tool
 * that passed the check is callable; one cache, so each schema is compiled once for both.
 *
 * The setup: JSON Schema draft-07 (ajv's default class: `items: [...]` is a tuple,
 * `prefixItems` is not a keyword), `allErrors`, non-strict (vendor keywords and unknown formats
 * pass), the schema checked against the draft-07 meta-schema, own properties only (so
 * `required: ["valueOf"]` is not met by `Object.prototype`), and patterns in linear time where
 * RE2 can express them (see linear-regexp.ts). `addUsedSchema: false`: a schema's `$id` is not
 * registered in the shared instance, so two tools may use the same `$id` and no tool's `$ref`
 * resolves through another tool's schema.
 *
 * Invariants:
 * - Compiled once per schema object: results (failures too) are cached in a `WeakMap` keyed by
 *   the schema. A schema changed after its first compile keeps its first result.
 * - The shared ajv instance keeps no schema alive: its own cache entry is removed after each
 *   compile (the returned function does not need it).
 * - Never throws: a schema ajv refuses (or that overflows the stack) comes back as
 *   `{ ok: false, reason }` with ajv's message.
 * @module
 */
import AjvModule, { type ValidateFunction } from "ajv";
import { describeThrown } from "../kernel/index.ts";
import { linearRegExp } from "./linear-regexp.ts";

const Ajv = AjvModule.default;

/** The outcome of {@link compileInputSchema}. */
export type CompiledInputSchema = { readonly ok: true; readonly validate: ValidateFunction } | { readonly ok: false; readonly reason: string };

const ajv = new Ajv({
  allErrors: true,
  strict: false,
  logger: false,
  validateSchema: true,
  addUsedSchema: false,
  // Patterns test script-chosen text on the host's thread: linear time (see linear-regexp.ts).
  code: { regExp: linearRegExp },
  // `required: ["valueOf"]` must not be met by Object.prototype, nor an optional "constructor"
  // property be checked against the inherited function.
  ownProperties: true,
});

const compiled = new WeakMap<object, CompiledInputSchema>();

/**
 * The validator of `schema` (an `inputSchema` object), compiled on first use and cached by
 * schema object, or why ajv cannot compile it. Never throws.
 */
export function compileInputSchema(schema: object): CompiledInputSchema {
  let result = compiled.get(schema);
  if (result === undefined) {
    result = compile(schema);
    compiled.set(schema, result);
  }
  return result;
}

function compile(schema: object): CompiledInputSchema {
  let result: CompiledInputSchema;
  try {
    result = { ok: true, validate: ajv.compile(schema) };
  } catch (error) {
    result = { ok: false, reason: describeThrown(error) };
  }
  try {
    ajv.removeSchema(schema);
  } catch {
    // Only an `$id` ajv cannot read throws here, after the cache entry is already gone.
  }
  return result;
}
