import type { ErrorObject, ValidateFunction } from "ajv";
import { isArtifactArgument, type InvocationFailure, type Tool } from "../../kernel/index.ts";
import { compileInputSchema, detailedValidator } from "../../toolbox/compile-input-schema.ts";
import { containsArtifactArgument } from "../contains-artifact-argument.ts";
import { invocationFailure } from "../invocation-failure.ts";

/** Most schema errors one message lists. */
const MAX_LISTED_ERRORS = 5;

/**
 * Arguments up to this many values (objects, arrays and scalars) are validated again with every
 * error collected when they fail, so the message lists each problem; larger ones get the first.
 */
const DETAILED_MAX_VALUES = 256;

/** A compiled schema, a cached compile failure, or `null` for a tool without a schema (anything goes). */
type CompiledSchema = { readonly validate: ValidateFunction | null; readonly schema?: object } | { readonly failure: InvocationFailure };

/**
 * Gate 4b, validation: checks the argument copy against the tool's `inputSchema` with the ajv
 * setup of `compileInputSchema` (draft-07, the first error, or every error for a small argument; non-strict so vendor keywords and
 * unknown formats pass; own properties only; patterns in linear time where RE2 can express
 * them), the same setup the tool check compiled the schema with, so the validator it cached is
 * reused: a schema is compiled once, by whichever comes first. Each tool's schema is read once
 * and its validator kept by tool object. A failure is `INVALID_ARGUMENTS` whose text names the
 * field and why, e.g. `argument "limit" must be integer`. A tool whose schema does not compile
 * (possible only for a tool the registry holds unchecked: `Toolbox` refuses it with
 * `TOOL_INVALID`) gives `NOT_CALLABLE` (cached too), never a crash.
 *
 * Artifact arguments: validation runs before `{ $artifact: ref }` values are resolved (a denied
 * call never touches the store), and each resolves to a string. So here such a value counts as
 * a string: a schema that wants something else there fails (`type`), while constraints on the
 * content itself (length, pattern, enum...) are left to {@link ArgumentValidator.validateResolved},
 * which the invoker runs on the resolved arguments when there were refs.
 */
export class ArgumentValidator {
  readonly #compiled = new WeakMap<object, CompiledSchema>();

  /** `undefined` when `args` is valid for `tool`, else the failure to return. */
  validate(tool: Tool<Record<string, unknown>, unknown>, args: Record<string, unknown>): InvocationFailure | undefined {
    let compiled = this.#compiled.get(tool);
    if (compiled === undefined) {
      compiled = this.#compile(tool);
      this.#compiled.set(tool, compiled);
    }
    if ("failure" in compiled) return compiled.failure;
    const validate = compiled.validate;
    if (validate === null) return undefined;
    const view = artifactsAsStrings(args);
    if (validate(view.value)) return undefined;
    let errors = validate.errors ?? [];
    // Every error for a small argument (see compile-input-schema.ts for why not always).
    const full = compiled.schema && countValues(view.value, DETAILED_MAX_VALUES) <= DETAILED_MAX_VALUES ? detailedValidator(compiled.schema) : undefined;
    if (full && !full(view.value) && full.errors) errors = full.errors;
    if (view.pointers.size > 0) {
      errors = errors.filter((error) => error.keyword === "type" || !view.pointers.has(error.instancePath));
      if (errors.length === 0) return undefined;
    }
    return invocationFailure("INVALID_ARGUMENTS", describeSchemaErrors(tool.name, errors) + nearArtifactHint(args, errors));
  }

  /**
   * Checks arguments whose artifact refs were resolved: the content must satisfy the schema too.
   * Same failures as {@link validate}, said to be about the artifact content.
   */
  validateResolved(tool: Tool<Record<string, unknown>, unknown>, resolved: Record<string, unknown>): InvocationFailure | undefined {
    const failure = this.validate(tool, resolved);
    if (failure === undefined || failure.code !== "INVALID_ARGUMENTS") return failure;
    return invocationFailure("INVALID_ARGUMENTS", `After resolving artifacts: ${failure.text}`);
  }

  #compile(tool: Tool<Record<string, unknown>, unknown>): CompiledSchema {
    const schema: unknown = tool.inputSchema;
    if (schema === undefined) return { validate: null };
    if (typeof schema !== "object" || schema === null || Array.isArray(schema)) {
      return { failure: brokenSchema(tool.name, "it is not a JSON Schema object") };
    }
    const compiled = compileInputSchema(schema);
    return compiled.ok ? { validate: compiled.validate, schema } : { failure: brokenSchema(tool.name, compiled.reason) };
  }
}

/**
 * A view of `args` with every `{ $artifact: ref }` replaced by the ref string (what the
 * resolved value's type will be), and the JSON pointers (ajv's `instancePath`) of those places.
 * Without refs (the common case) `args` itself comes back and nothing is allocated.
 */
function artifactsAsStrings(args: Record<string, unknown>): { value: unknown; pointers: ReadonlySet<string> } {
  if (!containsArtifactArgument(args)) return { value: args, pointers: NO_POINTERS };
  const pointers = new Set<string>();
  return { value: substituteArtifacts(args, "", pointers), pointers };
}

const NO_POINTERS: ReadonlySet<string> = new Set();

/** How many values `value` holds (itself included), counting no further than just past `limit`. */
function countValues(value: unknown, limit: number): number {
  let count = 0;
  const stack: unknown[] = [value];
  while (stack.length > 0 && count <= limit) {
    const item = stack.pop();
    count++;
    if (typeof item === "object" && item !== null) for (const child of Object.values(item)) stack.push(child);
  }
  return count;
}

function substituteArtifacts(value: unknown, pointer: string, pointers: Set<string>): unknown {
  if (typeof value !== "object" || value === null) return value;
  if (isArtifactArgument(value)) {
    pointers.add(pointer);
    return value.$artifact;
  }
  if (Array.isArray(value)) {
    let out: unknown[] | undefined;
    for (let i = 0; i < value.length; i++) {
      const item: unknown = value[i];
      const next = substituteArtifacts(item, `${pointer}/${i}`, pointers);
      if (next !== item) (out ??= value.slice())[i] = next;
    }
    return out ?? value;
  }
  let out: Record<string, unknown> | undefined;
  for (const key of Object.keys(value)) {
    const field = (value as Record<string, unknown>)[key];
    const next = substituteArtifacts(field, `${pointer}/${key.replace(/~/g, "~0").replace(/\//g, "~1")}`, pointers);
    if (next !== field) (out ??= { ...(value as Record<string, unknown>) })[key] = next;
  }
  return out ?? value;
}

/**
 * A hint for a failure at a value with a `$artifact` key, which the schema's own words do not
 * explain: an artifact argument (its content reaches the tool as a string, so a schema that wants
 * an array or object there refuses it), or an object that looks meant as one but is not (a
 * `$artifact` key beside others, or a ref that is not a string: passed as it is). Empty when no
 * failing value has a `$artifact` key.
 */
function nearArtifactHint(args: Record<string, unknown>, errors: readonly ErrorObject[]): string {
  for (const error of errors) {
    const value = valueAt(args, error.instancePath);
    if (typeof value !== "object" || value === null || Array.isArray(value) || !Object.hasOwn(value, "$artifact")) continue;
    const path = pointerToPath(error.instancePath);
    const what = subject(path).replace(/^a/, "A");
    if (isArtifactArgument(value)) {
      if (error.keyword !== "type") continue;
      return (
        ` ${what} is an artifact, which reaches the tool as a string (its text, or base64 for binary content), where the ` +
        "tool's schema wants another type: pass the value itself there (e.g. a result's structured data), or call a tool that takes the content as text."
      );
    }
    return (
      ` ${what} has a "$artifact" key but is not an artifact argument, so it was not replaced by the artifact's content: ` +
      "pass an artifact as an object with that one key and a ref string, `{ $artifact: result.artifactRef }` (or `artifact(ref)`), " +
      "and put other parameters beside it, not inside it."
    );
  }
  return "";
}

/** The value at a JSON pointer (ajv's `instancePath`) in `root`, or `undefined`. */
function valueAt(root: unknown, pointer: string): unknown {
  let value = root;
  for (const key of pointerKeys(pointer)) {
    if (typeof value !== "object" || value === null) return undefined;
    if (!Object.hasOwn(value, key)) return undefined;
    value = (value as Record<string, unknown>)[key];
  }
  return value;
}

function brokenSchema(name: string, why: string): InvocationFailure {
  return invocationFailure(
    "NOT_CALLABLE",
    `Tool "${name}" cannot be called: its inputSchema is not a valid JSON Schema (${why}). This is a fault of the tool's definition, not of the call.`,
  );
}

/**
 * One line per schema error, naming the field path (`items[0].name`) and why, e.g.
 * `Invalid arguments for "search": argument "limit" must be integer; argument "query" is required.`
 */
export function describeSchemaErrors(toolName: string, errors: readonly ErrorObject[]): string {
  const lines: string[] = [];
  const seen = new Set<string>();
  for (const error of errors) {
    const line = describeSchemaError(error);
    if (seen.has(line)) continue;
    seen.add(line);
    lines.push(line);
  }
  const shown = lines.slice(0, MAX_LISTED_ERRORS);
  const more = lines.length > shown.length ? ` (and ${lines.length - shown.length} more)` : "";
  return `Invalid arguments for "${toolName}": ${shown.join("; ")}${more}. Fix the arguments to match the tool's input schema.`;
}

function describeSchemaError(error: ErrorObject): string {
  const path = pointerToPath(error.instancePath);
  const params = error.params as Record<string, unknown>;
  switch (error.keyword) {
    case "required":
      return `${subject(joinPath(path, String(params.missingProperty)))} is required`;
    case "additionalProperties":
      return `${subject(joinPath(path, String(params.additionalProperty)))} is not allowed (no such parameter)`;
    case "enum": {
      const allowed = Array.isArray(params.allowedValues) ? params.allowedValues.map((v) => JSON.stringify(v)).join(", ") : "";
      return `${subject(path)} must be one of ${allowed}`;
    }
    case "const":
      return `${subject(path)} must be ${JSON.stringify(params.allowedValue)}`;
    case "format": {
      const format = String(params.format);
      const example = Object.hasOwn(FORMAT_EXAMPLES, format) ? FORMAT_EXAMPLES[format] : undefined;
      return `${subject(path)} ${error.message ?? "fails \"format\""}${example === undefined ? "" : ` (${example})`}`;
    }
    default:
      return `${subject(path)} ${error.message ?? `fails "${error.keyword}"`}`;
  }
}

/** What a value of each checked format looks like, for the model: the strict forms trip it most. */
const FORMAT_EXAMPLES: Readonly<Record<string, string>> = {
  "date-time": 'RFC 3339, with a time zone: "2026-11-28T14:30:00Z" or "2026-11-28T14:30:00+01:00"',
  time: 'RFC 3339, with a time zone: "14:30:00Z" or "14:30:00+01:00"',
  date: 'e.g. "2026-11-28"',
  duration: 'ISO 8601, e.g. "P3D" or "PT1H30M"',
  email: 'e.g. "name@example.com"',
  uri: 'absolute, with a scheme: e.g. "https://example.com/page"',
  url: 'absolute, with a scheme: e.g. "https://example.com/page"',
  uuid: 'e.g. "0b3c9a52-5d1e-4a8f-9c6e-2f4b7d8e1a30"',
  hostname: 'e.g. "example.com"',
  ipv4: 'e.g. "192.0.2.1"',
  ipv6: 'e.g. "2001:db8::1"',
};

function subject(path: string): string {
  return path === "" ? "arguments" : `argument "${path}"`;
}

function joinPath(base: string, key: string): string {
  if (/^\d+$/.test(key)) return `${base}[${key}]`;
  return base === "" ? key : `${base}.${key}`;
}

/** `/items/0/name` → `items[0].name`. */
function pointerToPath(pointer: string): string {
  let path = "";
  for (const key of pointerKeys(pointer)) path = joinPath(path, key);
  return path;
}

/** The keys of a JSON pointer, unescaped: `/a~1b/0` → `["a/b", "0"]`; none for `""`. */
function pointerKeys(pointer: string): string[] {
  if (pointer === "") return [];
  return pointer
    .slice(1)
    .split("/")
    .map((raw) => raw.replace(/~1/g, "/").replace(/~0/g, "~"));
}
