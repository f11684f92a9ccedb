/**
 * `renderDeclarations`: the TypeScript text a model reads before it writes a chain script. One
 * method per callable tool on `declare const tools`, argument types from `inputSchema`,
 * `structured` typed from `outputSchema`, descriptions as TSDoc, plus the few globals the
 * prelude installs (`budget`, `artifact`) and the `InvocationResult` every call resolves to.
 *
 * Rules of the schema → type mapping (the same reading as `FromSchema`, in text):
 * `const`/`enum` → literal unions; `anyOf`/`oneOf` → unions; `allOf` → intersections; a `type`
 * array → a union; `nullable: true` adds `| null`; `items` → `T[]` (an array of schemas, or
 * `prefixItems`, → a tuple); `properties` + `required` → required and optional members;
 * `additionalProperties` → an index signature (joined with `&` when there are properties, so
 * the members need not fit it); anything else → `unknown`.
 *
 * Output is compact: an object type goes on one line unless a member carries a doc comment or
 * the line would pass {@link INLINE_WIDTH} characters.
 * @module
 */
import { isLocalTool, type AnyTool, type InvocationErrorCode, type Tool } from "../kernel/index.ts";
import { toolKind } from "./tool-kind.ts";

/** Options of {@link renderDeclarations}. */
export interface RenderDeclarationsOptions {
  /** Start with the short usage note for the model. @defaultValue true */
  readonly usageNote?: boolean;
}

/** Object types longer than this go on several lines. */
export const INLINE_WIDTH = 80;

const ERROR_CODES = [
  "BUDGET_EXCEEDED",
  "UNKNOWN_TOOL",
  "NOT_CALLABLE",
  "INVALID_ARGUMENTS",
  "APPROVAL_DENIED",
  "APPROVAL_TIMEOUT",
  "APPROVAL_SKIPPED",
  "ARTIFACT_NOT_FOUND",
  "CANCELLED",
  "TIMEOUT",
  "TOOL_ERROR",
  "TOOL_FAILED",
  "RESULT_INVALID",
  "BRIDGE_ERROR",
  "STORE_FAILED",
  "IN_DOUBT",
] as const satisfies readonly InvocationErrorCode[];
// Fails to compile when the kernel gains a code this list lacks.
const _allCodesListed: readonly (typeof ERROR_CODES)[number][] = [] as InvocationErrorCode[];

const USAGE_NOTE = [
  "// Write a script body: top-level await and return work; the return value must be JSON.",
  '// Tool calls never throw: check r.status ("ok" | "error" | "denied") before using r.structured.',
  "// Big results come back as a preview plus r.artifactRef: pass them on as artifact(ref) (= { $artifact: ref }).",
];

const PRELUDE = [
  `type InvocationErrorCode = ${ERROR_CODES.map((code) => `"${code}"`).join(" | ")};`,
  "interface ChainFile { path: string; artifactRef: string; mimeType: string; bytes: number }",
  "/** What every tool call resolves to. text: the result (a preview when offloaded to artifactRef). */",
  "type InvocationResult<S = Record<string, unknown>> =",
  "  | { status: \"ok\"; text: string; structured?: S; artifactRef?: string; bytes?: number; files?: ChainFile[] }",
  "  | { status: \"error\" | \"denied\"; text: string; code: InvocationErrorCode; structured?: Record<string, unknown> };",
];

const GLOBALS = [
  "/** Tool calls this chain may make, and how many are left. */",
  "declare const budget: { readonly total: number; readonly remaining: number };",
  "/** A tool argument that hands over a stored artifact by ref, without loading it here. */",
  "declare function artifact(ref: string): { $artifact: string };",
];

/**
 * The declarations for the callable tools among `tools` (local tools; hosted, provider-defined
 * and the chain tool itself are skipped), in the order given. Deferred tools are rendered
 * like any other: pass only the tools the model should see.
 */
export function renderDeclarations(tools: Iterable<AnyTool>, options: RenderDeclarationsOptions = {}): string {
  const callable = [...tools].filter((tool): tool is Tool<never, unknown> => isLocalTool(tool) && toolKind(tool) === "local");
  const lines = [...(options.usageNote === false ? [] : USAGE_NOTE), ...PRELUDE];
  if (callable.length === 0) {
    lines.push("declare const tools: {};");
  } else {
    lines.push("declare const tools: {");
    for (const tool of callable) lines.push(...renderMethod(tool));
    lines.push("};");
  }
  lines.push(...GLOBALS);
  return `${lines.join("\n")}\n`;
}

function renderMethod(tool: Tool<never, unknown>): string[] {
  const docLines = tool.description.trim() === "" ? [] : tool.description.trim().split(/\r?\n/);
  const risk = tool.risk ?? "safe";
  if (risk !== "safe") docLines.push(`Risk: ${risk}; may need approval, so a call can come back "denied".`);
  const structured = structuredType(tool.outputSchema);
  const result = structured === undefined ? "InvocationResult" : `InvocationResult<${structured}>`;
  return [...doc(docLines, 1), `  ${propertyKey(tool.name)}(args: ${typeOf(tool.inputSchema, 1)}): Promise<${result}>;`];
}

/** The type argument of `InvocationResult` for an output schema, or `undefined` for the default. */
function structuredType(schema: unknown): string | undefined {
  if (!isRecord(schema)) return undefined;
  const type = typeOf(schema, 1);
  if (type === "unknown") return undefined;
  const objectLike = schema.type === "object" || (schema.type === undefined && (isRecord(schema.properties) || isRecord(schema.additionalProperties)));
  if (objectLike) return type;
  // plain non-object values are normalised to structuredContent { value }; strings stay text only
  if (schema.type === "string") return undefined;
  return `{ value: ${type} }`;
}

/** The TypeScript type of the values `schema` accepts, indented for nesting level `depth`. */
function typeOf(schema: unknown, depth: number): string {
  if (schema === false) return "never";
  if (!isRecord(schema)) return "unknown";
  const core = coreType(schema, depth);
  return schema.nullable === true && core !== "unknown" ? union([core, "null"]) : core;
}

function coreType(schema: Record<string, unknown>, depth: number): string {
  if ("const" in schema) return literal(schema.const);
  if (Array.isArray(schema.enum)) return union(schema.enum.map(literal));
  if (Array.isArray(schema.anyOf)) return union(schema.anyOf.map((member) => typeOf(member, depth)));
  if (Array.isArray(schema.oneOf)) return union(schema.oneOf.map((member) => typeOf(member, depth)));
  if (Array.isArray(schema.allOf)) {
    const parts = [...new Set(schema.allOf.map((member) => typeOf(member, depth)).filter((part) => part !== "unknown"))];
    return parts.length === 0 ? "unknown" : parts.map(parenthesize).join(" & ");
  }
  const types: unknown[] = Array.isArray(schema.type)
    ? schema.type
    : typeof schema.type === "string"
      ? [schema.type]
      : isRecord(schema.properties) || schema.additionalProperties !== undefined
        ? ["object"]
        : schema.items !== undefined || schema.prefixItems !== undefined
          ? ["array"]
          : [];
  if (types.length === 0) return "unknown";
  return union(types.map((type) => typeName(type, schema, depth)));
}

function typeName(type: unknown, schema: Record<string, unknown>, depth: number): string {
  switch (type) {
    case "string":
    case "boolean":
    case "null":
      return type;
    case "number":
    case "integer":
      return "number";
    case "array":
      return arrayType(schema, depth);
    case "object":
      return objectType(schema, depth);
    default:
      return "unknown";
  }
}

function arrayType(schema: Record<string, unknown>, depth: number): string {
  const tuple = Array.isArray(schema.prefixItems) ? schema.prefixItems : Array.isArray(schema.items) ? schema.items : undefined;
  if (tuple !== undefined) return `[${tuple.map((item) => typeOf(item, depth)).join(", ")}]`;
  if (schema.items === undefined || schema.items === true) return "unknown[]";
  return `${parenthesize(typeOf(schema.items, depth))}[]`;
}

function objectType(schema: Record<string, unknown>, depth: number): string {
  const properties = isRecord(schema.properties) ? Object.entries(schema.properties) : [];
  const required = new Set(Array.isArray(schema.required) ? schema.required.filter((key) => typeof key === "string") : []);
  const extra = schema.additionalProperties;
  if (properties.length === 0) {
    if (isRecord(extra)) return `{ [key: string]: ${typeOf(extra, depth)} }`;
    if (extra === false) return "{}";
    return "Record<string, unknown>";
  }
  const members = properties.map(([key, property]) => ({
    doc: isRecord(property) ? propertyDoc(property) : [],
    text: `${propertyKey(key)}${required.has(key) ? "" : "?"}: ${typeOf(property, depth + 1)}`,
  }));
  if (extra === true) members.push({ doc: [], text: "[key: string]: unknown" });
  const inline = `{ ${members.map((member) => member.text).join("; ")} }`;
  const fits = members.every((member) => member.doc.length === 0 && !member.text.includes("\n")) && inline.length + depth * 2 <= INLINE_WIDTH;
  const body = fits
    ? inline
    : ["{", ...members.flatMap((member) => [...doc(member.doc, depth + 1), `${indent(depth + 1)}${member.text};`]), `${indent(depth)}}`].join("\n");
  return isRecord(extra) ? `${body} & { [key: string]: ${typeOf(extra, depth)} }` : body;
}

/** A property's TSDoc lines: its description, then its default and constraints as tags. */
function propertyDoc(schema: Record<string, unknown>): string[] {
  const lines = typeof schema.description === "string" && schema.description.trim() !== "" ? schema.description.trim().split(/\r?\n/) : [];
  const tags: string[] = [];
  if (schema.default !== undefined) tags.push(`@default ${JSON.stringify(schema.default)}`);
  for (const key of ["format", "pattern", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "minLength", "maxLength", "minItems", "maxItems"]) {
    const value = schema[key];
    if (typeof value === "string" || typeof value === "number") tags.push(`@${key} ${String(value)}`);
  }
  if (tags.length > 0) lines.push(tags.join(" "));
  return lines;
}

function doc(lines: readonly string[], depth: number): string[] {
  const safe = lines.map((line) => line.replaceAll("*/", "*\\/").trimEnd());
  const pad = indent(depth);
  if (safe.length === 0) return [];
  if (safe.length === 1) return [`${pad}/** ${safe[0]} */`];
  return [`${pad}/**`, ...safe.map((line) => (line === "" ? `${pad} *` : `${pad} * ${line}`)), `${pad} */`];
}

function literal(value: unknown): string {
  if (typeof value === "string" || typeof value === "boolean" || value === null) return JSON.stringify(value);
  if (typeof value === "number" && Number.isFinite(value)) return String(value);
  return "unknown";
}

function union(parts: readonly string[]): string {
  const unique = [...new Set(parts)];
  if (unique.includes("unknown")) return "unknown";
  if (unique.length === 0) return "never";
  return unique.join(" | ");
}

/** Wraps a type in parentheses when it has a top-level `|` or `&` (for `T[]` and `A & B`). */
function parenthesize(type: string): string {
  let level = 0;
  for (let index = 0; index < type.length; index++) {
    const char = type[index];
    if (char === '"') {
      // skip a string literal (JSON-escaped, so a quote inside is always preceded by a backslash)
      for (index++; index < type.length && type[index] !== '"'; index++) if (type[index] === "\\") index++;
    } else if (char === "{" || char === "[" || char === "(" || char === "<") level++;
    else if (char === "}" || char === "]" || char === ")" || char === ">") level--;
    else if (level === 0 && (char === "|" || char === "&")) return `(${type})`;
  }
  return type;
}

function propertyKey(name: string): string {
  return /^[A-Za-z_$][A-Za-z0-9_$]*$/.test(name) ? name : JSON.stringify(name);
}

function indent(depth: number): string {
  return "  ".repeat(depth);
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
