/**
 * `Toolbox`: the name-keyed registry of every tool an agent owns, local, hosted and
 * provider-defined side by side.
 *
 * Invariants:
 * - One tool per name. Adding a name again replaces the old tool in place (its position in
 *   `all()` / `names()` is kept; order is first insertion).
 * - Every tool held passed `assertValidTool` (`TOOL_INVALID` otherwise).
 * - A tool is held under the name the check read (each field is read once, by
 *   `readValidTool`): a `name` getter cannot pass the checks as one name and be kept as
 *   another. The box holds the tool object itself, and a tool changed after it was added is not
 *   checked again; `defineTool`'s tools cannot be renamed or given a new schema (their fields
 *   are read-only).
 * - A name in `RESERVED_TOOL_NAMES` (`run_chain`) is held only by a tool branded with
 *   `brandChainTool` (`TOOL_NAME_TAKEN` otherwise), so a user tool can never pose as the chain.
 * - `add` checks every tool before adding any: a failing call leaves the box unchanged.
 * - What is not a list at all (`null`, a string, one tool, a plain object) is refused with
 *   `ARGUMENT_INVALID` before any tool is looked at; a malformed *item* is `TOOL_INVALID`.
 * @module
 */
import {
  ChainRuntimeError,
  RESERVED_TOOL_NAMES,
  digestJson,
  isChainTool,
  isLocalTool,
  type AnyTool,
  type Tool,
  type ToolRisk,
} from "../kernel/index.ts";
import type { Skill } from "../skills/skill.ts";
import { readValidTool } from "./assert-valid-tool.ts";
import {
  encodeTool,
  encodeTools,
  toVercelAITools,
  type AnthropicCustomTool,
  type GenericToolSchema,
  type OpenAIFunctionTool,
  type ProviderSpec,
  type ProviderToolSchemas,
  type ToolProvider,
  type VercelAITool,
} from "./provider-schemas.ts";
import { toolKind, type ToolKind } from "./tool-kind.ts";

/** One tool's line in a {@link ToolboxFingerprint}. */
export interface ToolFingerprint {
  readonly name: string;
  readonly kind: ToolKind;
  /** The tool's risk; `"safe"` for tools that do not run here. */
  readonly risk: ToolRisk;
  /** sha256 (hex) of the canonical JSON of what the model sees of the tool (see `fingerprint`). */
  readonly schemaDigest: string;
}

/** What a toolbox offers, as digests: equal tool sets give equal fingerprints. */
export interface ToolboxFingerprint {
  /** Sorted by name. */
  readonly tools: readonly ToolFingerprint[];
  /** sha256 (hex) of the canonical JSON of `tools`. */
  readonly digest: string;
}

/** The schema list of one provider: a record for `vercel`, an array for the others. */
export type ProviderSchemaList<P extends ToolProvider> = P extends "vercel"
  ? Record<string, VercelAITool | ProviderSpec>
  : ProviderToolSchemas[P][];

/** The name-keyed tool registry. Iterable (over `all()`). */
export class Toolbox implements Iterable<AnyTool> {
  readonly #tools = new Map<string, AnyTool>();

  /**
   * Starts with `tools` (see {@link Toolbox.add} for the rules). Throws `ChainRuntimeError`
   * `ARGUMENT_INVALID` when `tools` is not an array (or other iterable, a `Toolbox` included)
   * of tools: `null`, a string, a single tool, a plain object.
   */
  constructor(tools: Iterable<AnyTool> = []) {
    checkToolList(tools);
    this.add(...tools);
  }

  /**
   * Adds tools; a name already present is replaced. Returns `this`.
   * Throws `ChainRuntimeError` `TOOL_INVALID` for a malformed tool and `TOOL_NAME_TAKEN` for a
   * reserved name (`run_chain`) on a tool that is not isochain's branded chain tool. Nothing is
   * added when any tool fails.
   */
  add(...tools: AnyTool[]): this {
    const checked = tools.map((tool): [string, AnyTool] => {
      const { name } = readValidTool(tool);
      if (RESERVED_TOOL_NAMES.has(name) && !isChainTool(tool)) {
        throw new ChainRuntimeError("TOOL_NAME_TAKEN", `The tool name "${name}" is reserved by isochain; rename your tool.`, {
          details: { tool: name },
        });
      }
      return [name, tool];
    });
    for (const [name, tool] of checked) this.#tools.set(name, tool);
    return this;
  }

  /** The tool named `name`, or `undefined`. */
  get(name: string): AnyTool | undefined {
    return this.#tools.get(name);
  }

  /** Every tool, in first-insertion order. */
  all(): AnyTool[] {
    return [...this.#tools.values()];
  }

  /** Every name, in first-insertion order. */
  names(): string[] {
    return [...this.#tools.keys()];
  }

  /** True when a tool named `name` is held. */
  has(name: string): boolean {
    return this.#tools.has(name);
  }

  /** How many tools are held. */
  get size(): number {
    return this.#tools.size;
  }

  /** The tools held, in the order they were added (as {@link Toolbox.all} lists them). */
  [Symbol.iterator](): Iterator<AnyTool> {
    return this.#tools.values();
  }

  /** Local tools (the chain tool included) whose risk is exactly `risk`; no `risk` counts as `"safe"`. */
  byRisk(risk: ToolRisk): Tool<never, unknown>[] {
    return this.all().filter((tool): tool is Tool<never, unknown> => isLocalTool(tool) && (tool.risk ?? "safe") === risk);
  }

  /** Local tools a chain may call: not hosted, not provider-defined, not the chain tool itself. */
  callable(): Tool<never, unknown>[] {
    return this.all().filter((tool): tool is Tool<never, unknown> => toolKind(tool) === "local");
  }

  /**
   * The tools to send up front (all but `deferLoading` ones) in `provider`'s shape (see
   * `provider-schemas.ts`): an array, or a name-keyed record for `vercel`. Tools the provider
   * cannot take are dropped.
   * @param provider - @defaultValue `"generic"` (MCP `tools/list` shape)
   */
  schemas(): (GenericToolSchema | ProviderSpec)[];
  schemas(provider: "openai"): (OpenAIFunctionTool | ProviderSpec)[];
  schemas(provider: "anthropic"): (AnthropicCustomTool | ProviderSpec)[];
  schemas(provider: "vercel"): Record<string, VercelAITool | ProviderSpec>;
  schemas(provider: "generic"): (GenericToolSchema | ProviderSpec)[];
  schemas<P extends ToolProvider>(provider: P): ProviderSchemaList<P>;
  schemas(provider: ToolProvider = "generic"): ProviderSchemaList<ToolProvider> {
    return this.#encode(this.all().filter((tool) => !isDeferred(tool)), provider);
  }

  /** Like {@link Toolbox.schemas}, for the `deferLoading` tools only. */
  deferredSchemas(): (GenericToolSchema | ProviderSpec)[];
  deferredSchemas(provider: "openai"): (OpenAIFunctionTool | ProviderSpec)[];
  deferredSchemas(provider: "anthropic"): (AnthropicCustomTool | ProviderSpec)[];
  deferredSchemas(provider: "vercel"): Record<string, VercelAITool | ProviderSpec>;
  deferredSchemas(provider: "generic"): (GenericToolSchema | ProviderSpec)[];
  deferredSchemas<P extends ToolProvider>(provider: P): ProviderSchemaList<P>;
  deferredSchemas(provider: ToolProvider = "generic"): ProviderSchemaList<ToolProvider> {
    return this.#encode(this.all().filter(isDeferred), provider);
  }

  /**
   * The schema of one tool (deferred or not) in `provider`'s shape (for `vercel`, the record
   * entry). `undefined` when no such tool exists or the provider cannot take it.
   * @param provider - @defaultValue `"generic"`
   */
  schemaFor<P extends ToolProvider = "generic">(name: string, provider: P = "generic" as P): ProviderToolSchemas[P] | undefined {
    const tool = this.#tools.get(name);
    if (tool === undefined) return undefined;
    const encoded = encodeTool(tool, provider);
    return encoded.ok ? encoded.schema : undefined;
  }

  /**
   * Digests of what the model sees of each tool, sorted by name, and one digest of them all:
   * the same tools give the same fingerprint whatever the order they were added in. A tool's
   * `schemaDigest` covers its kind, name, description and, for local tools, `inputSchema`,
   * `outputSchema`, `deferLoading`, `takesControl`; for others `providerSpecs` (and
   * `callTypes`). Risk is listed beside it and covered by `digest`.
   */
  fingerprint(): ToolboxFingerprint {
    const tools = this.all()
      .map((tool): ToolFingerprint => {
        const kind = toolKind(tool);
        const local = isLocalTool(tool) ? tool : undefined;
        const seen: Record<string, unknown> = { kind, name: tool.name, description: tool.description };
        if (local !== undefined) {
          Object.assign(seen, {
            inputSchema: local.inputSchema,
            outputSchema: local.outputSchema,
            deferLoading: local.deferLoading === true,
            takesControl: local.takesControl === true,
          });
        } else {
          Object.assign(seen, {
            providerSpecs: (tool as { providerSpecs?: unknown }).providerSpecs,
            callTypes: (tool as { callTypes?: unknown }).callTypes,
          });
        }
        return { name: tool.name, kind, risk: local?.risk ?? "safe", schemaDigest: digestJson(seen) };
      })
      .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    return { tools, digest: digestJson(tools) };
  }

  /**
   * A new toolbox holding only the tools named in `allowedTools` (same tool objects, this
   * box's order). Names with no tool here are ignored. Throws `ARGUMENT_INVALID` when
   * `allowedTools` is not an array (or other iterable) of names: `null`, a string, an object.
   */
  narrow(allowedTools: Iterable<string>): Toolbox {
    if (!isList(allowedTools)) {
      throw new ChainRuntimeError("ARGUMENT_INVALID", `Toolbox.narrow() takes an array of tool names; got ${describeValue(allowedTools)}.`, {
        details: { argument: "allowedTools" },
      });
    }
    const allowed = new Set(allowedTools);
    return new Toolbox(this.all().filter((tool) => allowed.has(tool.name)));
  }

  /**
   * {@link Toolbox.narrow} by the skill's `allowedTools`. A `"*"` entry keeps every tool; an
   * empty list keeps none.
   */
  withSkill(skill: Pick<Skill, "allowedTools">): Toolbox {
    if (typeof skill !== "object" || skill === null || !Array.isArray(skill.allowedTools)) {
      throw new ChainRuntimeError("ARGUMENT_INVALID", `Toolbox.withSkill() takes a skill with an allowedTools array (defineSkill(...)); got ${describeSkill(skill)}.`, {
        details: { argument: "skill" },
      });
    }
    return skill.allowedTools.includes("*") ? new Toolbox(this.all()) : this.narrow(skill.allowedTools);
  }

  #encode(tools: AnyTool[], provider: ToolProvider): ProviderSchemaList<ToolProvider> {
    if (provider === "vercel") return toVercelAITools(tools);
    return encodeTools(tools, provider) as ProviderSchemaList<typeof provider>;
  }
}

/** An iterable that is not a string (whose characters would be taken one by one). */
function isList(value: unknown): value is Iterable<unknown> {
  return typeof value === "object" && value !== null && typeof (value as Partial<Iterable<unknown>>)[Symbol.iterator] === "function";
}

/** @throws ChainRuntimeError `ARGUMENT_INVALID` unless `tools` is a list `add` can spread. */
function checkToolList(tools: unknown): asserts tools is Iterable<unknown> {
  if (isList(tools)) return;
  // The common slip: one tool where a list of them belongs.
  const name = typeof tools === "object" && tools !== null ? (tools as { name?: unknown }).name : undefined;
  const got = typeof name === "string" ? `one tool ("${clipName(name)}"); wrap it in an array: new Toolbox([tool])` : describeValue(tools);
  throw new ChainRuntimeError("ARGUMENT_INVALID", `new Toolbox() takes an array of tools (defineTool(...)); got ${got}.`, {
    details: { argument: "tools" },
  });
}

/** What a refused argument is, for a message: its kind, never its (possibly huge or secret) content. */
function describeValue(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  switch (typeof value) {
    case "object":
      return isList(value) ? "an iterable that is not an array" : "an object that is not iterable";
    case "string":
      return "a string";
    case "undefined":
      return "undefined";
    default:
      return `a ${typeof value}`;
  }
}

function describeSkill(skill: unknown): string {
  if (typeof skill === "object" && skill !== null) return `an object whose allowedTools is ${describeValue((skill as { allowedTools?: unknown }).allowedTools)}`;
  return describeValue(skill);
}

function clipName(name: string): string {
  return name.length > 64 ? `${name.slice(0, 64)}…` : name;
}

function isDeferred(tool: AnyTool): boolean {
  return isLocalTool(tool) && tool.deferLoading === true;
}
