/**
 * `renderDeclarations`: the TypeScript text a model reads before it writes a chain script. One
 * method per callable tool on `declare const tools`, argument types from `inputSchema`,
 * `structured` typed from `outputSchema`, descriptions as TSDoc, plus the few globals the
 * prelude installs (`budget`, `artifact`) and the `InvocationResult` every call resolves to.
 *
 * The schema → type mapping reads JSON Schema as the invoker validates it (draft-07, ajv; see
 * compile-input-schema.ts), so a call validation accepts type-checks. All keywords of a schema
 * hold at once, so each schema is read as the JSON kinds it lets through (null, boolean, number,
 * string, array, object), and its keywords are intersected kind by kind:
 * - `type` (an array is a union; `integer` is `number`; `nullable: true` adds `null`, only
 *   beside `type`, as in ajv); without `type`, object keywords mean an object and `items` an
 *   array; `const`/`enum` → literal unions (kept only where the `type` allows them);
 *   `anyOf`/`oneOf` → unions; `allOf` → intersections (`A & B` for object and array shapes);
 *   a `$ref` into the same schema (`#`, `#/$defs/…`, `#/definitions/…`) → its target, read in
 *   place beside the other keywords (ajv applies both), a recursive one → `unknown` (see
 *   {@link refVariants}); `false` → `never`; anything else (`not`, `if`, a `$ref` elsewhere)
 *   constrains nothing → `unknown`.
 * - arrays by draft-07: `items` as a list is a tuple whose elements are optional unless
 *   `minItems` reaches them, followed by `additionalItems` (absent: `...unknown[]`); 2020-12's
 *   `prefixItems` is no keyword there, so it is ignored (see {@link arrayType}).
 * - objects: `properties` + `required` → members, required keys without a property too;
 *   `additionalProperties` → one index signature whose type also covers the members (see
 *   {@link objectType}); keywords that may allow keys no type shows (`patternProperties`
 *   without `additionalProperties`, `dependencies`, `if`/`then`, a `$ref` not read) →
 *   `[key: string]: unknown`; `__proto__` keys are left out (the invoker drops them from calls).
 * - `structured` is typed as `normalizeToolResult` shapes a result: objects as they are, other
 *   values (arrays, numbers, booleans, null) as `{ value }`, strings not at all.
 * Where a type cannot say what validation checks (lengths, patterns, formats, `not`, `oneOf`
 * exclusivity, an extra key holding a member's type), the type accepts more, and validation
 * answers the call; constraints show as TSDoc tags. Two readings are stricter on purpose, to
 * catch mistakes early: object (array) keywords without `type` give an object (array) type, and
 * `properties` without `additionalProperties` declare no extra keys (unless one of those
 * keywords may allow some), so a misspelt argument is a type error although validation would
 * let it through.
 *
 * Depth: the tool check refuses schemas nested past `MAX_SCHEMA_DEPTH`; a schema handed here
 * unchecked renders as `unknown` below that depth, so rendering never overflows the stack.
 *
 * Output is compact: an object type goes on one line unless a member carries a doc comment or
 * the line would pass {@link INLINE_WIDTH} characters.
 * @module
 */
import { INVOCATION_ERROR_CODES, isLocalTool, type AnyTool, type Tool } from "../kernel/index.ts";
import { MAX_SCHEMA_DEPTH } from "./assert-valid-tool.ts";
import { toolKind } from "./tool-kind.ts";

/** Options of {@link renderDeclarations}. */
export interface RenderDeclarationsOptions {
  /** Start with the short usage note for the model. @defaultValue true */
  readonly usageNote?: boolean;
}

/** Object types longer than this go on several lines. */
export const INLINE_WIDTH = 80;

const USAGE_NOTE = [
  "// Write a script body: top-level await and return work; the return value must be JSON.",
  '// Tool calls never throw: check r.status ("ok" | "error" | "denied") before using r.structured.',
  "// Big results come back as a preview plus r.artifactRef: pass them on as artifact(ref) (= { $artifact: ref }).",
];

const PRELUDE = [
  `type InvocationErrorCode = ${INVOCATION_ERROR_CODES.map((code) => `"${code}"`).join(" | ")};`,
  "interface ChainFile { path: string; artifactRef: string; mimeType: string; bytes: number }",
  "/** What every tool call resolves to. text: the result (a preview when offloaded to artifactRef). */",
  "type InvocationResult<S = Record<string, unknown>> =",
  "  | { status: \"ok\"; text: string; structured?: S; artifactRef?: string; bytes?: number; files?: ChainFile[] }",
  "  | { status: \"error\" | \"denied\"; text: string; code: InvocationErrorCode; structured?: Record<string, unknown>; artifactRef?: string; bytes?: number };",
];

const GLOBALS = [
  "/** Tool calls this chain may make, and how many are left. */",
  "declare const budget: { readonly total: number; readonly remaining: number };",
  "/** A tool argument that hands over a stored artifact by ref, without loading it here. */",
  "declare function artifact(ref: string): { $artifact: string };",
  "/** Output captured into the run's outputText; table, dir, trace, assert, group, count and time work too. */",
  "declare const console: { log(...data: unknown[]): void; info(...data: unknown[]): void; warn(...data: unknown[]): void; error(...data: unknown[]): void; debug(...data: unknown[]): void };",
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
  const docLines = tool.description.trim() === "" ? [] : [tool.description.trim()];
  const risk = tool.risk ?? "safe";
  if (risk !== "safe") docLines.push(`Risk: ${risk}; may need approval, so a call can come back "denied".`);
  const structured = structuredType(tool.outputSchema);
  const result = structured === undefined ? "InvocationResult" : `InvocationResult<${structured}>`;
  return [...doc(docLines, 1), `  ${propertyKey(tool.name)}(args: ${typeOf(tool.inputSchema, 1, 1, refsOf(tool.inputSchema))}): Promise<${result}>;`];
}

/**
 * The type argument of `InvocationResult` for an output schema, or `undefined` for the default.
 * Mirrors `normalizeToolResult`, which decides by the value a tool returns: a plain object is
 * `structured` as it is, a string has no `structured`, anything else (array, number, boolean,
 * `null`) is wrapped as `{ value }`. So each JSON kind the schema allows is typed that way, and
 * `{ anyOf: [object, object] }`, `type: ["object", "null"]` or `allOf` of objects come out as
 * `A | B`, `A | { value: null }`, `A & B`.
 */
function structuredType(schema: unknown): string | undefined {
  if (schema === undefined) return undefined;
  const variants = variantsOf(schema, 1, 1, refsOf(schema));
  if (variants === ANY || isOpaque(variants)) return undefined;
  const parts = (variants.get("object") ?? []).map((alternative) => alternative.text);
  const wrapped = [...variants].flatMap(([kind, alternatives]) => (kind === "object" || kind === "string" ? [] : alternatives.map((alternative) => alternative.text)));
  if (wrapped.length > 0) parts.push(`{ value: ${wrapped.join(" | ")} }`);
  return parts.length === 0 ? undefined : parts.join(" | ");
}

/** The JSON kinds a schema sorts values into (`integer` is a `number`). */
type Kind = "null" | "boolean" | "number" | "string" | "array" | "object";

/** The TypeScript type of every value of a kind. */
const KIND_TYPES: Readonly<Record<Kind, string>> = {
  null: "null",
  boolean: "boolean",
  number: "number",
  string: "string",
  array: "unknown[]",
  object: "Record<string, unknown>",
};

/**
 * Any object, with any keys, that an intersection must keep: `Record<string, unknown>` (every
 * object) drops out of `A & Record<string, unknown>`, this stays, so `A` takes extra keys.
 */
const OPEN_OBJECT = "{ [key: string]: unknown }";

/**
 * One alternative of a kind, rendered: its text, and whether that is an intersection `A & B`
 * (which needs parentheses before `[]` or `?`). The renderer knows where it put an operator
 * and never reads rendered text back: a doc comment inside may hold any character.
 */
interface Alternative {
  readonly text: string;
  readonly intersection: boolean;
}

function atom(text: string): Alternative {
  return { text, intersection: false };
}

/** Any value at all: the schema constrains nothing the renderer reads. */
const ANY = "any";

/** No value at all (`false`, an empty `anyOf`). */
const NOTHING: Variants = new Map();

/**
 * Any value, objects with any keys: what a schema the renderer cannot read stands for when it
 * may allow keys no `properties` names (an unresolved or recursive `$ref`, `if`/`then`,
 * `dependencies`). Unlike {@link ANY} it keeps an object it is intersected with open.
 */
const OPAQUE: ReadonlyMap<Kind, readonly Alternative[]> = new Map(Object.entries(KIND_TYPES).map(([kind, type]) => [kind as Kind, [atom(kind === "object" ? OPEN_OBJECT : type)]]));

/**
 * The values a schema accepts, by kind: for each kind it lets through, the alternatives (a
 * union) of its TypeScript types. An empty map accepts nothing (`never`).
 */
type Variants = typeof ANY | ReadonlyMap<Kind, readonly Alternative[]>;

/** What resolving the `$ref`s of one schema needs (see {@link refVariants}). */
interface Refs {
  /** The document `#` names, or `undefined` when `$ref`s are not resolved. */
  readonly root: unknown;
  /** What is being read now (the root, each `$ref` target being expanded): meeting one again is recursion. */
  readonly expanding: Set<unknown>;
  /** Expansions left (a few shared definitions must not multiply into a huge text). */
  expansionsLeft: number;
}

/** At most this many `$ref` expansions per schema; past them a `$ref` renders as unknown. */
const MAX_REF_EXPANSIONS = 200;

/**
 * The `$ref` scope of a root schema. Only refs ajv resolves against the root are followed
 * (`#` and `#/json/pointer`), and none when a subschema declares a base `$id` of its own, since
 * `#/…` inside it would point into that subschema.
 */
function refsOf(root: unknown): Refs {
  // The root is being read already: `#` inside it is recursion.
  return { root: isRecord(root) && !hasInnerId(root) ? root : undefined, expanding: new Set([root]), expansionsLeft: MAX_REF_EXPANSIONS };
}

function hasInnerId(root: Record<string, unknown>): boolean {
  const seen = new Set<unknown>([root]);
  const pending: unknown[] = Object.values(root);
  while (pending.length > 0) {
    const value = pending.pop();
    if (typeof value !== "object" || value === null || seen.has(value)) continue;
    seen.add(value);
    const id: unknown = isRecord(value) ? value.$id : undefined;
    if (typeof id === "string" && !id.startsWith("#")) return true;
    for (const child of Object.values(value)) pending.push(child);
  }
  return false;
}

/**
 * The TypeScript type of the values `schema` accepts. `depth` is the indentation level (one more
 * per object member); `level` counts subschemas from the root: past `MAX_SCHEMA_DEPTH` (which the
 * tool check enforces, so only unchecked tools get there) the rest is `unknown`.
 */
function typeOf(schema: unknown, depth: number, level: number, refs: Refs): string {
  return render(variantsOf(schema, depth, level, refs));
}

function render(variants: Variants): string {
  if (variants === ANY || isOpaque(variants)) return "unknown";
  return union([...variants.values()].flat().map((alternative) => alternative.text));
}

/** `variants` rendered to stand before `[]` or `?`: in parentheses when it is a union or an intersection. */
function operand(variants: Variants): string {
  const text = render(variants);
  if (variants === ANY || text === "unknown" || text === "never") return text;
  const alternatives = [...variants.values()].flat();
  return alternatives.length > 1 || alternatives[0]?.intersection === true ? `(${text})` : text;
}

/** `alternatives` (of one kind) rendered to stand beside `&`: in parentheses when more than one. */
function conjunct(alternatives: readonly Alternative[]): string {
  const text = union(alternatives.map((alternative) => alternative.text));
  return alternatives.length > 1 ? `(${text})` : text;
}

function isOpaque(variants: Variants): boolean {
  if (variants === ANY) return false;
  return [...OPAQUE].every(([kind, [whole]]) => {
    const types = variants.get(kind);
    return types?.length === 1 && types[0]?.text === whole?.text;
  });
}

/**
 * What `schema` accepts: all its keywords hold at once (draft-07), so the `type` (with `nullable`),
 * `const`, `enum`, the `anyOf`/`oneOf` union, each `allOf` member and the `$ref` target (ajv
 * applies the keywords beside a `$ref` too) are intersected, kind by kind.
 */
function variantsOf(schema: unknown, depth: number, level: number, refs: Refs): Variants {
  if (schema === false) return NOTHING;
  if (!isRecord(schema) || level > MAX_SCHEMA_DEPTH) return ANY;
  const next = level + 1;
  let variants = typeVariants(schema, depth, next, refs);
  // Keywords that may allow keys without a type to show them on: any value, objects open.
  if (variants === ANY && allowsUnnamedKeys(schema)) variants = OPAQUE;
  if ("const" in schema) variants = intersect(variants, literals([schema.const]));
  if (Array.isArray(schema.enum)) variants = intersect(variants, literals(schema.enum));
  for (const keyword of ["anyOf", "oneOf"] as const) {
    const members: unknown = schema[keyword];
    if (Array.isArray(members)) variants = intersect(variants, members.map((member) => variantsOf(member, depth, next, refs)).reduce(unite, NOTHING));
  }
  if (Array.isArray(schema.allOf)) for (const member of schema.allOf) variants = intersect(variants, variantsOf(member, depth, next, refs));
  if (schema.$ref !== undefined) variants = intersect(variants, refVariants(schema.$ref, depth, next, refs));
  return variants;
}

/**
 * Whether keywords the renderer cannot type may let keys through that `properties` does not
 * name (so the object must take extra keys): `patternProperties` (without
 * `additionalProperties`, which types them), `dependencies`, 2019-09's `dependentSchemas`
 * (ajv's draft-07 ignores it, so the keys it names validate as extra keys) and `if` with `then`
 * or `else`.
 */
function allowsUnnamedKeys(schema: Record<string, unknown>): boolean {
  return (
    (schema.additionalProperties === undefined && isRecord(schema.patternProperties) && Object.keys(schema.patternProperties).length > 0) ||
    isRecord(schema.dependencies) ||
    isRecord(schema.dependentSchemas) ||
    (schema.if !== undefined && (schema.then !== undefined || schema.else !== undefined))
  );
}

/**
 * What a `$ref` points at, read in place. A ref not resolved against the root (another
 * document, an `$id` or anchor), a recursive one (met again inside its own expansion) and any
 * past {@link MAX_REF_EXPANSIONS} stand for {@link OPAQUE}: any value, objects open.
 */
function refVariants(ref: unknown, depth: number, level: number, refs: Refs): Variants {
  const target = resolveRef(ref, refs.root);
  if (target === undefined || refs.expanding.has(target) || refs.expansionsLeft <= 0) return OPAQUE;
  refs.expansionsLeft--;
  refs.expanding.add(target);
  try {
    return variantsOf(target, depth, level, refs);
  } finally {
    refs.expanding.delete(target);
  }
}

/** The subschema of `root` that a local ref (`#`, `#/json/pointer`, URI-escaped) names, or `undefined`. */
function resolveRef(ref: unknown, root: unknown): unknown {
  if (root === undefined || typeof ref !== "string" || (ref !== "#" && !ref.startsWith("#/"))) return undefined;
  let target: unknown = root;
  for (const segment of ref === "#" ? [] : ref.slice(2).split("/")) {
    let key: string;
    try {
      key = decodeURIComponent(segment).replaceAll("~1", "/").replaceAll("~0", "~");
    } catch {
      return undefined;
    }
    if (Array.isArray(target) && /^(?:0|[1-9]\d*)$/.test(key)) target = target[Number(key)];
    else if (isRecord(target) && Object.hasOwn(target, key)) target = target[key];
    else return undefined;
  }
  return target;
}

/**
 * The kinds `type` allows, each with its shape: a `type` array is a union, `integer` a number,
 * and `nullable: true` adds `null` (only beside `type`, as ajv reads it). Without `type`, object
 * keywords (`properties`, `required`, `additionalProperties`, `patternProperties`) mean an object
 * and `items` an array; otherwise any value.
 */
function typeVariants(schema: Record<string, unknown>, depth: number, level: number, refs: Refs): Variants {
  const declared: unknown[] | undefined = Array.isArray(schema.type) ? [...schema.type] : typeof schema.type === "string" ? [schema.type] : undefined;
  const names: unknown[] =
    declared !== undefined
      ? declared
      : ["properties", "required", "additionalProperties", "patternProperties"].some((keyword) => schema[keyword] !== undefined)
        ? ["object"]
        : schema.items !== undefined
          ? ["array"]
          : [];
  if (names.length === 0) return ANY;
  if (declared !== undefined && schema.nullable === true && !names.includes("null")) names.push("null");
  const variants = new Map<Kind, Alternative[]>();
  for (const name of names) {
    const kind = name === "integer" ? "number" : name;
    if (!isKind(kind)) return ANY;
    if (variants.has(kind)) continue;
    variants.set(kind, [atom(kind === "array" ? arrayType(schema, depth, level, refs) : kind === "object" ? objectType(schema, depth, level, refs) : KIND_TYPES[kind])]);
  }
  return variants;
}

/** The variants of a list of JSON values (`const`, `enum`): literal types where TypeScript has them. */
function literals(values: readonly unknown[]): Variants {
  const byKind = new Map<Kind, Alternative[]>();
  for (const value of values) {
    const kind = kindOf(value);
    if (kind === undefined) continue;
    const types = byKind.get(kind) ?? [];
    types.push(atom(kind === "array" || kind === "object" ? KIND_TYPES[kind] : literal(value)));
    byKind.set(kind, types);
  }
  return new Map([...byKind].map(([kind, types]) => [kind, alternatives(kind, types)]));
}

function kindOf(value: unknown): Kind | undefined {
  if (value === null) return "null";
  if (Array.isArray(value)) return "array";
  if (typeof value === "boolean") return "boolean";
  if (typeof value === "string") return "string";
  if (typeof value === "object") return "object";
  return typeof value === "number" && Number.isFinite(value) ? "number" : undefined;
}

function isKind(value: unknown): value is Kind {
  return typeof value === "string" && Object.hasOwn(KIND_TYPES, value);
}

/**
 * `types` as the alternatives of one kind: without repeats, and the whole kind absorbs its
 * members (`string | "a"` is `string`); an open object absorbs every object, `Record<string,
 * unknown>` too, so the union stays open.
 */
function alternatives(kind: Kind, types: Iterable<Alternative>): readonly Alternative[] {
  const unique = new Map<string, Alternative>();
  for (const type of types) if (!unique.has(type.text)) unique.set(type.text, type);
  for (const whole of kind === "object" ? [OPEN_OBJECT, KIND_TYPES.object] : [KIND_TYPES[kind]]) {
    const found = unique.get(whole);
    if (found !== undefined) return [found];
  }
  return [...unique.values()];
}

/** The values either accepts (`anyOf`, `oneOf`). */
function unite(a: Variants, b: Variants): Variants {
  if (a === ANY || b === ANY) {
    // Any value; and objects stay open when the other side keeps them open.
    const other = a === ANY ? b : a;
    return other !== ANY && other.get("object")?.[0]?.text === OPEN_OBJECT ? OPAQUE : ANY;
  }
  const out = new Map(a);
  for (const [kind, types] of b) out.set(kind, alternatives(kind, [...(out.get(kind) ?? []), ...types]));
  return out;
}

/**
 * The values both accept (`allOf`, and the keywords of one schema). Literal kinds keep the
 * literals both allow; object and array shapes are joined with `&`.
 */
function intersect(a: Variants, b: Variants): Variants {
  if (a === ANY) return b;
  if (b === ANY) return a;
  const out = new Map<Kind, readonly Alternative[]>();
  for (const [kind, left] of a) {
    const right = b.get(kind);
    if (right === undefined) continue;
    const all = KIND_TYPES[kind];
    if (right[0]?.text === all) out.set(kind, left);
    else if (left[0]?.text === all) out.set(kind, right);
    else if (kind === "array" || kind === "object") {
      const l = conjunct(left);
      const r = conjunct(right);
      out.set(kind, l === r ? left : [{ text: `${l} & ${r}`, intersection: true }]);
    } else {
      const allowed = new Set(right.map((type) => type.text));
      const common = left.filter((type) => allowed.has(type.text));
      if (common.length > 0) out.set(kind, common);
    }
  }
  return out;
}

/**
 * An array type by draft-07, the validator's draft: `items` as one schema types every element;
 * `items` as a list types the first elements only, each optional unless `minItems` reaches it,
 * and the rest follow `additionalItems` (absent: anything; `false`: none); `maxItems` cuts the
 * list. `prefixItems` (2020-12) is not a draft-07 keyword and validation ignores it, so it is
 * ignored here too.
 */
function arrayType(schema: Record<string, unknown>, depth: number, level: number, refs: Refs): string {
  const items = schema.items;
  if (Array.isArray(items)) return tupleType(schema, items, depth, level, refs);
  if (items === false) return "[]";
  return `${operand(variantsOf(items ?? true, depth, level, refs))}[]`;
}

function tupleType(schema: Record<string, unknown>, items: readonly unknown[], depth: number, level: number, refs: Refs): string {
  const minItems = typeof schema.minItems === "number" ? schema.minItems : 0;
  const maxItems = typeof schema.maxItems === "number" ? schema.maxItems : Number.POSITIVE_INFINITY;
  const elements = items.slice(0, Math.max(0, Math.min(items.length, maxItems))).map((item, index) => {
    const variants = variantsOf(item, depth, level, refs);
    return index < minItems ? render(variants) : `${operand(variants)}?`;
  });
  const rest = maxItems > items.length && schema.additionalItems !== false ? variantsOf(schema.additionalItems ?? true, depth, level, refs) : NOTHING;
  if (render(rest) !== "never") {
    if (elements.length === 0) return `${operand(rest)}[]`;
    elements.push(`...${operand(rest)}[]`);
  }
  return `[${elements.join(", ")}]`;
}

/**
 * An object type: `properties` as members, optional unless `required`; a required key that
 * `properties` does not name is a member too, typed by what the extra keys may hold. Extra keys
 * get an index signature when `additionalProperties` is given: its type, or with `false` the
 * `patternProperties` types (none: a closed object); the index type is joined with the member
 * types (and `undefined` for optional ones), as TypeScript needs every member to fit it, so an
 * extra key may hold a member's type too (validation still refuses it). With no
 * `additionalProperties`, extra keys validate but are declared only when `properties` names
 * nothing, so a misspelt argument stays a type error, or when keywords the type cannot show
 * may allow keys (see {@link allowsUnnamedKeys}): then they may hold anything. An object that
 * declares no member but takes any key is {@link OPEN_OBJECT} when a keyword says so
 * (`additionalProperties: true`, those keywords), so that it keeps the keys open in an
 * intersection. `__proto__` keys are left out: the invoker drops them from every call.
 */
function objectType(schema: Record<string, unknown>, depth: number, level: number, refs: Refs): string {
  const properties = isRecord(schema.properties) ? Object.entries(schema.properties).filter(([key]) => key !== "__proto__") : [];
  const required = new Set(Array.isArray(schema.required) ? schema.required.filter((key): key is string => typeof key === "string" && key !== "__proto__") : []);
  const extra = schema.additionalProperties;
  const patterns = isRecord(schema.patternProperties) ? Object.values(schema.patternProperties) : [];
  const open = extra === undefined && allowsUnnamedKeys(schema);
  // What extra keys may hold (`never`: none), when `additionalProperties` says, nothing is named or keys may be hidden.
  const indexType =
    extra === undefined
      ? properties.length === 0 || open
        ? "unknown"
        : undefined
      : render([...(extra === false ? [] : [extra]), ...patterns].map((member) => variantsOf(member, depth, level, refs)).reduce(unite, NOTHING));
  const members = properties.map(([key, property]) => ({
    key,
    optional: !required.has(key),
    doc: isRecord(property) ? propertyDoc(property) : [],
    type: typeOf(property, depth + 1, level, refs),
  }));
  const named = new Set(properties.map(([key]) => key));
  for (const key of required) {
    if (!named.has(key)) members.push({ key, optional: false, doc: [], type: indexType ?? (extra === false ? "never" : "unknown") });
  }
  const lines = members.map((member) => ({ doc: member.doc, text: `${propertyKey(member.key)}${member.optional ? "?" : ""}: ${member.type}` }));
  if (indexType !== undefined && indexType !== "never") {
    const optional = members.some((member) => member.optional) ? ["undefined"] : [];
    lines.push({ doc: [], text: `[key: string]: ${union([indexType, ...members.map((member) => member.type), ...optional])}` });
  }
  if (lines.length === 0) return extra === false ? "Record<string, never>" : KIND_TYPES.object;
  if (members.length === 0 && indexType === "unknown") return extra === undefined && !open ? KIND_TYPES.object : OPEN_OBJECT;
  const inline = `{ ${lines.map((line) => line.text).join("; ")} }`;
  const fits = lines.every((line) => line.doc.length === 0 && !line.text.includes("\n")) && inline.length + depth * 2 <= INLINE_WIDTH;
  if (fits) return inline;
  return ["{", ...lines.flatMap((line) => [...doc(line.doc, depth + 1), `${indent(depth + 1)}${line.text};`]), `${indent(depth)}}`].join("\n");
}

/** A property's TSDoc lines: its description, then its default and constraints as tags. */
function propertyDoc(schema: Record<string, unknown>): string[] {
  const lines = typeof schema.description === "string" && schema.description.trim() !== "" ? [schema.description.trim()] : [];
  const tags: string[] = [];
  if (schema.default !== undefined) tags.push(`@default ${JSON.stringify(schema.default)}`);
  for (const key of ["format", "pattern", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "minLength", "maxLength", "minItems", "maxItems"]) {
    const value = schema[key];
    if (typeof value === "string" || typeof value === "number") tags.push(`@${key} ${String(value)}`);
  }
  if (tags.length > 0) lines.push(tags.join(" "));
  return lines;
}

/** Every line break JavaScript knows, so no text put in a comment starts a line without ` * `. */
const LINE_BREAK = /\r\n|[\n\r\u2028\u2029]/;

/**
 * A TSDoc comment of `lines` at `depth`. Each is split at every line break first (a description,
 * a `pattern` or a `default` may hold them), so every line of the comment keeps its ` * `.
 */
function doc(lines: readonly string[], depth: number): string[] {
  const safe = lines.flatMap((line) => line.split(LINE_BREAK)).map((line) => line.replaceAll("*/", "*\\/").trimEnd());
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
  const unique = [...new Set(parts)].filter((part) => part !== "never");
  if (unique.includes("unknown")) return "unknown";
  if (unique.length === 0) return "never";
  return unique.join(" | ");
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
