import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import {
  type AnyTool,
  ChainRuntimeError,
  describeThrown,
  isChainRuntimeError,
  isHostedTool,
  isLocalTool,
  isProviderDefinedTool,
  Toolbox,
} from "../index.ts";
import { checkToolModuleFile } from "./input-file.ts";
import { awaitStep } from "./pending-step.ts";

/**
 * Loads the tools a module exports: a default export that is a `Toolbox` or an array of tools,
 * a named `tools` export of either kind, or else the tools of every named export that is a
 * tool, a `Toolbox` or an array of tools, together.
 *
 * A module is user code: it may throw anything at import (`throw null`), and its exports may
 * trap when read (a Proxy, a throwing getter). Every such failure is `CLI_USAGE` naming the
 * module, with the thrown value described by `describeThrown`. Two different tools under one
 * name (two named exports, or two entries of an array) are refused, not resolved by order, and
 * so is a module whose toolbox ends up empty (`export default []` as much as `export {}`). A
 * module whose top-level await never settles is named by main.ts when nothing else is left to
 * run (see pending-step.ts).
 * @throws ChainRuntimeError `CLI_USAGE`.
 */
export async function loadToolModule(path: string): Promise<Toolbox> {
  await checkToolModuleFile(path);
  let module: Record<string, unknown>;
  try {
    module = (await awaitStep(neverLoaded(path), import(pathToFileURL(resolve(path)).href))) as Record<string, unknown>;
  } catch (error) {
    throw new ChainRuntimeError("CLI_USAGE", `Could not load the tool module ${path}: ${thrownText(error)}`, { cause: error, details: { path } });
  }
  let toolbox: Toolbox;
  try {
    toolbox = toolboxOf(module, path);
  } catch (error) {
    if (isChainRuntimeError(error) && error.code === "CLI_USAGE") throw error;
    const message = isChainRuntimeError(error)
      ? `The module ${path} exports a tool isochain refuses: ${error.code}: ${error.message}`
      : `Could not read the tools the module ${path} exports: ${thrownText(error)}. Export tools, an array of tools or a Toolbox (plain values, not proxies or getters that throw).`;
    throw new ChainRuntimeError("CLI_USAGE", message, { cause: error, details: { path } });
  }
  if (toolbox.names().length === 0) {
    throw new ChainRuntimeError("CLI_USAGE", `The module ${path} exports an empty toolbox: a script run with it could call nothing. Export at least one tool.`, {
      details: { path },
    });
  }
  return toolbox;
}

/** What is said, exit code 2, when the import of `path` never settles (see pending-step.ts). */
function neverLoaded(path: string): string {
  return (
    `CLI_USAGE: Could not load the tool module ${path}: it never finished loading (its top-level await did not settle). ` +
    "Make every top-level await in it settle, or move the waiting into a tool's execute."
  );
}

/** The toolbox `module` exports (see {@link loadToolModule}); may throw whatever its exports throw. */
function toolboxOf(module: Record<string, unknown>, path: string): Toolbox {
  for (const [exportName, candidate] of [["default", module.default], ["tools", module.tools]] as const) {
    if (candidate instanceof Toolbox) return candidate;
    if (Array.isArray(candidate)) {
      const tools = [...(candidate as unknown[])];
      refuseSharedNames(tools.map((tool, index) => [`${exportName}[${index}]`, tool]), path);
      return new Toolbox(tools as AnyTool[]);
    }
  }
  const tools: [string, AnyTool][] = [];
  for (const [exportName, value] of Object.entries(module)) {
    if (isTool(value)) tools.push([`export ${exportName}`, value]);
    else if (value instanceof Toolbox) for (const tool of value.all()) tools.push([`export ${exportName} (a Toolbox)`, tool]);
    else if (Array.isArray(value) && value.length > 0 && value.every(isTool)) {
      (value as AnyTool[]).forEach((tool, index) => tools.push([`export ${exportName}[${index}]`, tool]));
    }
  }
  if (tools.length === 0) {
    throw new ChainRuntimeError(
      "CLI_USAGE",
      `The module ${path} exports no tools: export tools (defineTool(...)), a Toolbox or an array of tools, as the default export or by name.`,
      { details: { path } },
    );
  }
  refuseSharedNames(tools, path);
  return new Toolbox(tools.map(([, tool]) => tool));
}

function isTool(value: unknown): value is AnyTool {
  return isLocalTool(value) || isHostedTool(value) || isProviderDefinedTool(value);
}

/**
 * Refuses two different tools with one name among `entries` (where each was found, the tool):
 * the Toolbox would keep the last one without a word. The same tool found twice (`export { a as b }`)
 * is one tool.
 */
function refuseSharedNames(entries: readonly (readonly [string, unknown])[], path: string): void {
  const seen = new Map<unknown, { where: string; tool: unknown }>();
  for (const [where, tool] of entries) {
    if (typeof tool !== "object" || tool === null) continue; // the Toolbox says what is wrong with it
    const name = (tool as { name?: unknown }).name;
    const first = seen.get(name);
    if (first === undefined) seen.set(name, { where, tool });
    else if (first.tool !== tool) {
      throw new ChainRuntimeError(
        "CLI_USAGE",
        `The module ${path} has two tools named ${JSON.stringify(name)}: ${first.where} and ${where}. Rename one of them, or export only one.`,
        { details: { path, tool: name } },
      );
    }
  }
}

/** What a thrown value says: its message for an Error, else what it was (`it threw null, not an Error`). Never throws. */
function thrownText(error: unknown): string {
  let isError: boolean;
  try {
    isError = error instanceof Error;
  } catch {
    isError = false; // a Proxy whose getPrototypeOf trap throws
  }
  return isError ? describeThrown(error) : `it threw ${describeThrown(error)}, not an Error`;
}
