/**
 * `compileInputSchema`: the one ajv setup that checks tool arguments, shared by the tool check
 * (`assertValidTool` refuses an `inputSchema` it cannot compile) and the invoker
 * (`ArgumentValidator` validates every call with the function it returns). One setup, so a tool
 * that passed the check is callable; one cache, so each schema is compiled once for both.
 *
 * The setup: JSON Schema draft-07 (ajv's default class: `items: [...]` is a tuple,
 * `prefixItems` is not a keyword), the first error only (every error, for a message, through
 * `detailedValidator`), `uniqueItems` in linear time, non-strict (vendor keywords and unknown formats
 * pass), the `format`s of {@link CHECKED_FORMATS} checked (ajv-formats, its fast mode: linear time
 * on 8 MiB of script-chosen text, under 0.1 s measured), the schema checked against the draft-07 meta-schema, own properties only (so
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
import AjvModule, { type SchemaValidateFunction, type ValidateFunction } from "ajv";
import addFormatsModule, { type FormatName } from "ajv-formats";
import { canonicalJson, describeThrown } from "../kernel/index.ts";
import { linearRegExp } from "./linear-regexp.ts";

const Ajv = AjvModule.default;
const addFormats = addFormatsModule.default;

/**
 * The `format`s arguments are checked against. Left out, so they pass as any unknown format
 * does: `regex` (compiling script-chosen text as a RegExp held the host ~1 s for 8 MiB) and
 * `byte` (its base64 pattern overflows the stack on a long string); `binary` and `password`
 * check nothing.
 */
export const CHECKED_FORMATS: readonly FormatName[] = [
  "date",
  "time",
  "date-time",
  "duration",
  "uri",
  "uri-reference",
  "uri-template",
  "url",
  "email",
  "hostname",
  "ipv4",
  "ipv6",
  "uuid",
  "json-pointer",
  "relative-json-pointer",
  "int32",
  "int64",
  "float",
  "double",
];

/** The outcome of {@link compileInputSchema}. */
export type CompiledInputSchema = { readonly ok: true; readonly validate: ValidateFunction } | { readonly ok: false; readonly reason: string };

// ajv checks `uniqueItems` by comparing every pair of items (unless they are declared scalar):
// 49 000 distinct objects held the host's thread for 47 s, and the draft-07 meta-schema applies
// it to every `enum`, so a large enum stalled `defineTool` as well. The same rule in linear time:
// items are equal when their canonical JSON is (for JSON data, the deep equality ajv uses).
const uniqueItems: SchemaValidateFunction = (unique: boolean, data: readonly unknown[]): boolean => {
  uniqueItems.errors = [];
  if (!unique) return true;
  const seen = new Map<string, number>();
  for (let j = 0; j < data.length; j++) {
    const key = canonicalJson(data[j]);
    const i = seen.get(key);
    if (i !== undefined) {
      uniqueItems.errors = [{ keyword: "uniqueItems", params: { i, j }, message: `must NOT have duplicate items (items ## ${i} and ${j} are identical)` }];
      return false;
    }
    seen.set(key, j);
  }
  return true;
};

/** The shared setup; `allErrors` only for {@link detailedValidator}. */
function makeAjv(allErrors: boolean): InstanceType<typeof Ajv> {
  const instance = new Ajv({
    allErrors,
    strict: false,
    logger: false,
    // The detailed instance only compiles schemas the first one has checked.
    validateSchema: !allErrors,
    addUsedSchema: false,
    // Patterns test script-chosen text on the host's thread: linear time (see linear-regexp.ts).
    code: { regExp: linearRegExp },
    // `required: ["valueOf"]` must not be met by Object.prototype, nor an optional "constructor"
    // property be checked against the inherited function.
    ownProperties: true,
  });
  addFormats(instance, { mode: "fast", formats: [...CHECKED_FORMATS] });
  instance.removeKeyword("uniqueItems");
  instance.addKeyword({ keyword: "uniqueItems", type: "array", schemaType: "boolean", errors: true, validate: uniqueItems });
  return instance;
}

// The first error only: with every error collected, a recursive `anyOf` (a tree node whose child
// is one of several node kinds) makes validation exponential in time and memory in the
// argument's depth (a 1 KB argument nested 22 deep ran a host out of memory), since every branch
// is then walked to the bottom and its errors kept. See detailedValidator for the full list.
const ajv = makeAjv(false);
let detailedAjv: InstanceType<typeof Ajv> | undefined;

const compiled = new WeakMap<object, CompiledInputSchema>();

/**
 * The validator of `schema` (an `inputSchema` object), compiled on first use and cached by
 * schema object, or why ajv cannot compile it. Never throws.
 */
export function compileInputSchema(schema: object): CompiledInputSchema {
  let result = compiled.get(schema);
  if (result === undefined) {
    result = compile(ajv, schema);
    compiled.set(schema, result);
  }
  return result;
}

const detailed = new WeakMap<object, ValidateFunction | null>();

/**
 * A validator of `schema` that collects every error, for the message of a small argument the
 * first-error validator refused; `undefined` for a schema with a `$ref` (recursion is what makes
 * collecting every error exponential) or one that does not compile. Without `$ref`, the errors
 * are at most the schema's size times the argument's, so callers keep the argument small.
 * Cached by schema object; never throws.
 */
export function detailedValidator(schema: object): ValidateFunction | undefined {
  let found = detailed.get(schema);
  if (found === undefined) {
    let hasRef = true;
    try {
      hasRef = JSON.stringify(schema).includes('"$ref"');
    } catch {
      // Not JSON: the first error will do.
    }
    const result = hasRef ? undefined : compile((detailedAjv ??= makeAjv(true)), schema);
    found = result?.ok ? result.validate : null;
    detailed.set(schema, found);
  }
  return found ?? undefined;
}

function compile(instance: InstanceType<typeof Ajv>, schema: object): CompiledInputSchema {
  let result: CompiledInputSchema;
  try {
    result = { ok: true, validate: instance.compile(schema) };
  } catch (error) {
    result = { ok: false, reason: describeThrown(error) };
  }
  try {
    instance.removeSchema(schema);
  } catch {
    // Only an `$id` ajv cannot read throws here, after the cache entry is already gone.
  }
  return result;
}
