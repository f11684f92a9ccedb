import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { type AnyTool, ChainRuntimeError, isHostedTool, isLocalTool, isProviderDefinedTool, Toolbox } from "../index.ts";

/**
 * Loads the tools a module exports: a default export that is a `Toolbox` or an array of tools,
 * a named `tools` export of either kind, or else every named export that is a tool.
 */
export async function loadToolModule(path: string): Promise<Toolbox> {
  let module: Record<string, unknown>;
  try {
    module = (await import(pathToFileURL(resolve(path)).href)) as Record<string, unknown>;
  } catch (error) {
    throw new ChainRuntimeError("CLI_USAGE", `Could not load the tool module ${path}: ${(error as Error).message}`, { cause: error });
  }
  for (const candidate of [module.default, module.tools]) {
    if (candidate instanceof Toolbox) return candidate;
    if (Array.isArray(candidate)) return new Toolbox(candidate as AnyTool[]);
  }
  const tools = Object.values(module).filter(
    (value): value is AnyTool => isLocalTool(value) || isHostedTool(value) || isProviderDefinedTool(value),
  );
  if (tools.length === 0) {
    throw new ChainRuntimeError("CLI_USAGE", `The module ${path} exports no tools: export them by name, or a Toolbox as default.`);
  }
  return new Toolbox(tools);
}
