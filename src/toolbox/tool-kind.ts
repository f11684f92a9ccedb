import { isChainTool, isHostedTool, isProviderDefinedTool, type AnyTool } from "../kernel/index.ts";

/**
 * What kind of tool something is: `chain` (isochain's branded `run_chain`), `provider-defined`,
 * `hosted`, or `local`. Checked in that order, so the kinds never overlap.
 */
export type ToolKind = "local" | "hosted" | "provider-defined" | "chain";

/** The {@link ToolKind} of `tool`. */
export function toolKind(tool: AnyTool): ToolKind {
  if (isChainTool(tool)) return "chain";
  if (isProviderDefinedTool(tool)) return "provider-defined";
  if (isHostedTool(tool)) return "hosted";
  return "local";
}
