import type { ContentBlock } from "./content.ts";
import type { JsonSchema, ObjectJsonSchema } from "./json-schema.ts";
import type { ToolRisk } from "./tool-risk.ts";

/**
 * What a tool returns: the MCP `CallToolResult` shape. A tool may also return a plain value;
 * the invoker normalises it (JSON text + `structuredContent`).
 */
export interface ToolExecutionResult {
  /** The result as content blocks (text, image, audio, resource), as MCP tools return it. */
  readonly content: readonly ContentBlock[];
  /** True when the tool reports a failure of its own. */
  readonly isError?: boolean;
  /** Machine-readable result; becomes `InvocationResult.structured`. */
  readonly structuredContent?: Readonly<Record<string, unknown>>;
}

/** What a tool's `execute` receives besides its arguments. */
export interface ToolContext {
  /** Fires when the call times out, the chain is cancelled or the chain ends first. */
  readonly signal: AbortSignal;
  /** The chain this call belongs to, when it runs inside one. */
  readonly chainId?: string;
  /**
   * Stable id of this call: inside a chain `c<n>`, in the script's call order from `c0`; for a
   * direct invocation the call's own `id`, else `<chainId>:<seq>` of its session.
   */
  readonly callId: string;
  /** Throws the signal's reason when the call has been cancelled; call it between steps. */
  check(): void;
}

/** A tool that runs on this host: the model supplies arguments, isochain runs `execute`. */
export interface Tool<Args = Record<string, unknown>, Result = unknown> {
  /** The name scripts call it by (`tools.<name>`): {@link TOOL_NAME_PATTERN}, unique in a toolbox. */
  readonly name: string;
  /** What the tool does, for the model: printed above its declaration and in provider schemas. */
  readonly description: string;
  /**
   * JSON Schema of the arguments; validated with ajv before `execute` runs, on own properties.
   * `pattern` and `patternProperties` run in linear time (RE2), since scripts choose the text;
   * a pattern RE2 cannot express or compile (lookaround, backreferences, modifier groups,
   * `[^]`, `\cX`, `\S` inside a class, long property names like `\p{Letter}` (write `\p{L}`),
   * counts over 1 000) runs on V8's backtracking engine: keep such patterns free of nested
   * quantifiers.
   */
  readonly inputSchema: ObjectJsonSchema;
  /** JSON Schema of `structuredContent`; types `structured` in the chain declarations. */
  readonly outputSchema?: JsonSchema;
  /**
   * How much harm a call can do; a call above the policy's `maxRiskUnapproved` waits for the
   * approval handler before it runs.
   * @defaultValue `"safe"`
   */
  readonly risk?: ToolRisk;
  /** Left out of the first schema list; sent when the model asks for it. */
  readonly deferLoading?: boolean;
  /** The tool hands the turn over (deep research, a handoff): it must be called alone. */
  readonly takesControl?: boolean;
  /**
   * Runs the call with arguments that passed `inputSchema` (a copy of the script's own). Returns
   * a {@link ToolExecutionResult}, or a string (the text) or other JSON value (its JSON text and
   * `structured`; see `normalizeToolResult`, which refuses `undefined` and what JSON would lose);
   * a throw or rejection becomes a `TOOL_ERROR` result. Stop when `ctx.signal` fires: the call
   * timed out or its chain ended.
   */
  execute(args: Args, ctx: ToolContext): Promise<ToolExecutionResult | Result> | ToolExecutionResult | Result;
}

/** A provider's own spelling of a tool, keyed by provider name (`openai`, `anthropic`, ...). */
export type ProviderSpecs = Readonly<Record<string, Readonly<Record<string, unknown>>>>;

/** A tool the model provider runs itself (e.g. a hosted web search). Never runs locally. */
export interface HostedTool {
  /** The tool's name, as the model calls it. */
  readonly name: string;
  /** What the tool does, for the model. */
  readonly description: string;
  /** The tool as each provider spells it, sent as is when tools are encoded for that provider. */
  readonly providerSpecs: ProviderSpecs;
}

/** A call of a provider-defined tool, in the provider's own shape. */
export interface ProviderToolCall {
  readonly id?: string;
  readonly type: string;
  readonly name: string;
  readonly arguments: unknown;
}

/** A tool whose call shape the provider defines but which runs here (e.g. a shell call). */
export interface ProviderDefinedTool extends HostedTool {
  /** The provider call types this tool answers (e.g. `["shell_call"]`). */
  readonly callTypes: readonly string[];
  /** Runs one call of this tool (through `ToolManager`; chains cannot call it). */
  handleCall(call: ProviderToolCall, ctx: ToolContext): Promise<ToolExecutionResult>;
}

/** Any tool a toolbox can hold. */
export type AnyTool = Tool<never, unknown> | HostedTool | ProviderDefinedTool;

/** True for a provider-defined tool. Check this before {@link isHostedTool}: both have `providerSpecs`. */
export function isProviderDefinedTool(tool: unknown): tool is ProviderDefinedTool {
  return (
    typeof tool === "object" &&
    tool !== null &&
    typeof (tool as { handleCall?: unknown }).handleCall === "function" &&
    typeof (tool as { providerSpecs?: unknown }).providerSpecs === "object"
  );
}

/** True for a hosted tool (and for provider-defined ones, which also carry `providerSpecs`). */
export function isHostedTool(tool: unknown): tool is HostedTool {
  return (
    typeof tool === "object" &&
    tool !== null &&
    typeof (tool as { providerSpecs?: unknown }).providerSpecs === "object" &&
    (tool as { providerSpecs?: unknown }).providerSpecs !== null &&
    typeof (tool as { execute?: unknown }).execute !== "function"
  );
}

/** True for a local tool: one with an `execute` function. */
export function isLocalTool(tool: unknown): tool is Tool<never, unknown> {
  return (
    typeof tool === "object" &&
    tool !== null &&
    typeof (tool as { execute?: unknown }).execute === "function" &&
    !isProviderDefinedTool(tool)
  );
}

/** Names isochain keeps for itself; a toolbox refuses them. */
export const RESERVED_TOOL_NAMES: ReadonlySet<string> = new Set(["run_chain"]);

const CHAIN_TOOL_BRAND = Symbol.for("isochain.ToolChainTool");

/** Marks an object as isochain's own `run_chain` tool (done by `ToolChainTool`). */
export function brandChainTool(tool: object): void {
  Object.defineProperty(tool, CHAIN_TOOL_BRAND, { value: true });
}

/**
 * True for isochain's `run_chain` tool. A toolbox accepts it under a reserved name; the invoker
 * refuses to call it from inside a chain (no recursion).
 */
export function isChainTool(tool: unknown): boolean {
  return typeof tool === "object" && tool !== null && (tool as Record<symbol, unknown>)[CHAIN_TOOL_BRAND] === true;
}

/**
 * What a tool name may look like: a letter or `_`, then up to 63 letters, digits, `_`, `.` or
 * `-`. Note that OpenAI and Anthropic accept neither `.` nor a leading digit in function names;
 * the provider encoders drop (and report) local tools whose names the provider would reject.
 */
export const TOOL_NAME_PATTERN: RegExp = /^[A-Za-z_][A-Za-z0-9_.-]{0,63}$/;

/**
 * Orders tool names by UTF-16 code units (what `<` does on strings), the one order of tool
 * names everywhere it is observable: a toolbox fingerprint, and the keys of a script's `tools`
 * object (so `Object.keys(tools)` reads the same in a run and in its replay, which knows the
 * names only from the fingerprint).
 */
export function compareToolNames(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
