/**
 * Tool lists in each model provider's wire shape.
 *
 * - A local tool becomes a function schema (below, per provider).
 * - A hosted or provider-defined tool is sent as its `providerSpecs[provider]` entry, verbatim.
 *   Without an entry for that provider it is dropped: never sent half-formed.
 * - A local tool whose name the provider rejects (OpenAI and Anthropic allow only
 *   `[A-Za-z0-9_-]{1,64}`, so no `.`) is dropped too.
 *
 * Every drop is reported to `options.onDrop` when given. The encoders take the tools exactly as
 * given (a `Toolbox` is iterated whole, deferred tools included); `Toolbox.schemas()` is the
 * deferral-aware call. Schemas are shared with the tools, not copied: treat them as read-only.
 * What is not a list of tools at all (`null`, one tool, a plain object) is refused with
 * `ARGUMENT_INVALID` by {@link checkToolList}, the check `new Toolbox()` makes too.
 *
 * Shapes:
 * - `openai` (Chat Completions): `{ type: "function", function: { name, description, parameters } }`.
 * - `anthropic` (Messages): `{ name, description, input_schema }`.
 * - `vercel` (AI SDK 5 `tools` record): `{ [name]: { description, inputSchema: { jsonSchema },
 *   outputSchema?: { jsonSchema } } }`: the data the SDK's `jsonSchema()` wrapper holds, as
 *   plain JSON. Wrap it to use it: `tool({ description, inputSchema: jsonSchema(s.inputSchema.jsonSchema) })`.
 * - `generic` (MCP `tools/list` shape): `{ name, description, inputSchema, outputSchema? }`.
 * @module
 */
import { isLocalTool, type AnyTool, type JsonSchema, type ObjectJsonSchema } from "../kernel/index.ts";
import { checkToolList } from "./check-tool-list.ts";

/** A provider the encoders know. */
export type ToolProvider = "openai" | "anthropic" | "vercel" | "generic";

/** Every provider, for iteration. */
export const TOOL_PROVIDERS: readonly ToolProvider[] = Object.freeze(["openai", "anthropic", "vercel", "generic"]);

/** A hosted tool's own spec for one provider, sent verbatim. */
export type ProviderSpec = Readonly<Record<string, unknown>>;

/** An OpenAI Chat Completions function tool. */
export interface OpenAIFunctionTool {
  readonly type: "function";
  readonly function: { readonly name: string; readonly description: string; readonly parameters: ObjectJsonSchema };
}

/** An Anthropic Messages custom tool. */
export interface AnthropicCustomTool {
  readonly name: string;
  readonly description: string;
  readonly input_schema: ObjectJsonSchema;
}

/** One entry of an AI SDK `tools` record, as plain data (see the module note). */
export interface VercelAITool {
  readonly description: string;
  readonly inputSchema: { readonly jsonSchema: ObjectJsonSchema };
  readonly outputSchema?: { readonly jsonSchema: JsonSchema };
}

/** A tool as MCP's `tools/list` describes it. */
export interface GenericToolSchema {
  readonly name: string;
  readonly description: string;
  readonly inputSchema: ObjectJsonSchema;
  readonly outputSchema?: JsonSchema;
}

/** What each provider's encoding of one tool looks like. */
export interface ProviderToolSchemas {
  readonly openai: OpenAIFunctionTool | ProviderSpec;
  readonly anthropic: AnthropicCustomTool | ProviderSpec;
  readonly vercel: VercelAITool | ProviderSpec;
  readonly generic: GenericToolSchema | ProviderSpec;
}

/** Options of the encoders. */
export interface EncodeToolsOptions {
  /** Told of every tool left out, and why. @defaultValue none */
  readonly onDrop?: (tool: AnyTool, reason: string) => void;
}

const STRICT_FUNCTION_NAME = /^[A-Za-z0-9_-]{1,64}$/;

/** The outcome of encoding one tool: its schema, or why it was left out. */
export type EncodedTool<P extends ToolProvider> =
  | { readonly ok: true; readonly schema: ProviderToolSchemas[P] }
  | { readonly ok: false; readonly reason: string };

/** Encodes one tool for `provider`, or says why it cannot be sent there. Never throws. */
export function encodeTool<P extends ToolProvider>(tool: AnyTool, provider: P): EncodedTool<P> {
  if (!isLocalTool(tool)) {
    const specs = (tool as { providerSpecs?: Readonly<Record<string, ProviderSpec>> }).providerSpecs;
    const spec = specs !== undefined && Object.hasOwn(specs, provider) ? specs[provider] : undefined;
    if (spec === undefined) return { ok: false, reason: `"${tool.name}" runs at a provider and has no providerSpecs.${provider}.` };
    return { ok: true, schema: spec };
  }
  const { name, description, inputSchema, outputSchema } = tool;
  if ((provider === "openai" || provider === "anthropic") && !STRICT_FUNCTION_NAME.test(name)) {
    return { ok: false, reason: `"${name}" is not a valid ${provider} function name (letters, digits, _ and - only, at most 64).` };
  }
  const encoded: ProviderToolSchemas[ToolProvider] =
    provider === "openai"
      ? { type: "function", function: { name, description, parameters: inputSchema } }
      : provider === "anthropic"
        ? { name, description, input_schema: inputSchema }
        : provider === "vercel"
          ? { description, inputSchema: { jsonSchema: inputSchema }, ...(outputSchema === undefined ? {} : { outputSchema: { jsonSchema: outputSchema } }) }
          : { name, description, inputSchema, ...(outputSchema === undefined ? {} : { outputSchema }) };
  return { ok: true, schema: encoded as ProviderToolSchemas[P] };
}

/** Encodes each tool for an array-shaped provider, dropping the ones it cannot take. */
export function encodeTools<P extends "openai" | "anthropic" | "generic">(
  tools: Iterable<AnyTool>,
  provider: P,
  options: EncodeToolsOptions = {},
): ProviderToolSchemas[P][] {
  const out: ProviderToolSchemas[P][] = [];
  for (const tool of tools) {
    const encoded = encodeTool(tool, provider);
    if (encoded.ok) out.push(encoded.schema);
    else options.onDrop?.(tool, encoded.reason);
  }
  return out;
}

/**
 * The tools as OpenAI Chat Completions `tools`. Accepts a `Toolbox` or any iterable of tools.
 * @throws ChainRuntimeError `ARGUMENT_INVALID` when `tools` is not a list (see {@link checkToolList}).
 */
export function toOpenAITools(tools: Iterable<AnyTool>, options?: EncodeToolsOptions): (OpenAIFunctionTool | ProviderSpec)[] {
  checkToolList(tools, "toOpenAITools");
  return encodeTools(tools, "openai", options);
}

/**
 * The tools as Anthropic Messages `tools`. Accepts a `Toolbox` or any iterable of tools.
 * @throws ChainRuntimeError `ARGUMENT_INVALID` when `tools` is not a list (see {@link checkToolList}).
 */
export function toAnthropicTools(tools: Iterable<AnyTool>, options?: EncodeToolsOptions): (AnthropicCustomTool | ProviderSpec)[] {
  checkToolList(tools, "toAnthropicTools");
  return encodeTools(tools, "anthropic", options);
}

/**
 * The tools in MCP's `tools/list` shape. Accepts a `Toolbox` or any iterable of tools.
 * @throws ChainRuntimeError `ARGUMENT_INVALID` when `tools` is not a list (see {@link checkToolList}).
 */
export function toGenericTools(tools: Iterable<AnyTool>, options?: EncodeToolsOptions): (GenericToolSchema | ProviderSpec)[] {
  checkToolList(tools, "toGenericTools");
  return encodeTools(tools, "generic", options);
}

/**
 * The tools as an AI SDK `tools` record keyed by name (plain data; see the module note).
 * Accepts a `Toolbox` or any iterable of tools.
 * @throws ChainRuntimeError `ARGUMENT_INVALID` when `tools` is not a list (see {@link checkToolList}).
 */
export function toVercelAITools(tools: Iterable<AnyTool>, options: EncodeToolsOptions = {}): Record<string, VercelAITool | ProviderSpec> {
  checkToolList(tools, "toVercelAITools");
  const out: Record<string, VercelAITool | ProviderSpec> = {};
  for (const tool of tools) {
    const encoded = encodeTool(tool, "vercel");
    if (encoded.ok) Object.defineProperty(out, tool.name, { value: encoded.schema, enumerable: true, writable: true, configurable: true });
    else options.onDrop?.(tool, encoded.reason);
  }
  return out;
}

