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
 * - A provider or risk argument that names none (`schemas("OpenAI")`, `byRisk("HIGH")`) is
 *   refused with `ARGUMENT_INVALID` naming the valid ones, never answered in another shape or
 *   with an empty list.
 * @module
 */
import {
  ChainRuntimeError,
  RESERVED_TOOL_NAMES,
  digestJson,
  isChainTool,
  isLocalTool,
  isToolRisk,
  TOOL_RISKS,
  type AnyTool,
  type Tool,
  type ToolRisk,
} from "../kernel/index.ts";
import { suggestNames } from "../kernel/suggest-names.ts";
import type { Skill } from "../skills/skill.ts";
import { readValidTool } from "./assert-valid-tool.ts";
import { checkToolList, clipName, describeValue, isList } from "./check-tool-list.ts";
import {
  encodeTool,
  encodeTools,
  TOOL_PROVIDERS,
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
    checkToolList(tools, "new Toolbox");
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

  /**
   * Local tools (the chain tool included) whose risk is exactly `risk`; no `risk` counts as `"safe"`.
   * @throws ChainRuntimeError `ARGUMENT_INVALID` when `risk` is not one of `TOOL_RISKS`
   * (`"safe"`, `"high"`, `"critical"`), a missing one included.
   */
  byRisk(risk: ToolRisk): Tool<never, unknown>[] {
    if (!isToolRisk(risk)) refuseChoice("Toolbox.byRisk", "risk", risk, TOOL_RISKS);
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
   * @throws ChainRuntimeError `ARGUMENT_INVALID` when `provider` is given and is not one of
   * `"openai"`, `"anthropic"`, `"vercel"`, `"generic"` (names are lower-case).
   */
  schemas(): (GenericToolSchema | ProviderSpec)[];
  schemas(provider: "openai"): (OpenAIFunctionTool | ProviderSpec)[];
  schemas(provider: "anthropic"): (AnthropicCustomTool | ProviderSpec)[];
  schemas(provider: "vercel"): Record<string, VercelAITool | ProviderSpec>;
  schemas(provider: "generic"): (GenericToolSchema | ProviderSpec)[];
  schemas<P extends ToolProvider>(provider: P): ProviderSchemaList<P>;
  schemas(provider: ToolProvider = "generic"): ProviderSchemaList<ToolProvider> {
    checkProvider("Toolbox.schemas", provider);
    return this.#encode(this.all().filter((tool) => !isDeferred(tool)), provider);
  }

  /**
   * Like {@link Toolbox.schemas}, for the `deferLoading` tools only.
   * @throws ChainRuntimeError `ARGUMENT_INVALID` for an unknown `provider`, as `schemas` does.
   */
  deferredSchemas(): (GenericToolSchema | ProviderSpec)[];
  deferredSchemas(provider: "openai"): (OpenAIFunctionTool | ProviderSpec)[];
  deferredSchemas(provider: "anthropic"): (AnthropicCustomTool | ProviderSpec)[];
  deferredSchemas(provider: "vercel"): Record<string, VercelAITool | ProviderSpec>;
  deferredSchemas(provider: "generic"): (GenericToolSchema | ProviderSpec)[];
  deferredSchemas<P extends ToolProvider>(provider: P): ProviderSchemaList<P>;
  deferredSchemas(provider: ToolProvider = "generic"): ProviderSchemaList<ToolProvider> {
    checkProvider("Toolbox.deferredSchemas", provider);
    return this.#encode(this.all().filter(isDeferred), provider);
  }

  /**
   * The schema of one tool (deferred or not) in `provider`'s shape (for `vercel`, the record
   * entry). `undefined` when no such tool exists or the provider cannot take it.
   * @param provider - @defaultValue `"generic"`
   * @throws ChainRuntimeError `ARGUMENT_INVALID` for an unknown `provider`, as `schemas` does
   * (whether or not a tool is named `name`).
   */
  schemaFor<P extends ToolProvider = "generic">(name: string, provider: P = "generic" as P): ProviderToolSchemas[P] | undefined {
    checkProvider("Toolbox.schemaFor", provider);
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

/** @throws ChainRuntimeError `ARGUMENT_INVALID` unless `provider` is one of `TOOL_PROVIDERS`. */
function checkProvider(method: string, provider: unknown): asserts provider is ToolProvider {
  if (!(TOOL_PROVIDERS as readonly unknown[]).includes(provider)) refuseChoice(method, "provider", provider, TOOL_PROVIDERS);
}

/**
 * @throws ChainRuntimeError `ARGUMENT_INVALID` naming the refused `value` of `argument`, the
 * nearest of `choices` ("did you mean"), and all of them (`details.argument`, `details.choices`).
 */
function refuseChoice(method: string, argument: string, value: unknown, choices: readonly string[]): never {
  const valid = `Use one of ${choices.map((choice) => `"${choice}"`).join(", ")}.`;
  let message: string;
  if (typeof value === "string") {
    const near = suggestNames(value, choices);
    const hint = near.length > 0 ? `; did you mean ${near.map((choice) => `"${choice}"`).join(" or ")}?` : ".";
    message = `${method}(): unknown ${argument} "${clipName(value)}"${hint} ${valid}`;
  } else {
    message = `${method}() takes a ${argument}; got ${describeValue(value)}. ${valid}`;
  }
  throw new ChainRuntimeError("ARGUMENT_INVALID", message, { details: { argument, choices: [...choices] } });
}

function describeSkill(skill: unknown): string {
  if (typeof skill === "object" && skill !== null) return `an object whose allowedTools is ${describeValue((skill as { allowedTools?: unknown }).allowedTools)}`;
  return describeValue(skill);
}

function isDeferred(tool: AnyTool): boolean {
  return isLocalTool(tool) && tool.deferLoading === true;
}
