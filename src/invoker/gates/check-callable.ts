import {
  RESERVED_TOOL_NAMES,
  isChainTool,
  isHostedTool,
  isLocalTool,
  isProviderDefinedTool,
  type AnyTool,
  type InvocationFailure,
  type Tool,
} from "../../kernel/index.ts";
import { invocationFailure } from "../invocation-failure.ts";

/**
 * Gate 3, type gate: only local tools run inside a chain. Provider-defined tools (checked
 * first: they also carry `providerSpecs`), hosted tools, and isochain's own `run_chain` (no
 * recursion) are `NOT_CALLABLE`.
 */
export function checkCallable(tool: AnyTool, name: string): Tool<Record<string, unknown>, unknown> | InvocationFailure {
  if (isChainTool(tool) || RESERVED_TOOL_NAMES.has(name)) {
    return invocationFailure(
      "NOT_CALLABLE",
      `Tool "${name}" runs chains and cannot be called from inside one. Call the tools you need directly in this script.`,
    );
  }
  if (isProviderDefinedTool(tool)) {
    return invocationFailure(
      "NOT_CALLABLE",
      `Tool "${name}" is defined by the model provider and cannot be called from a chain. Call it directly, outside the script.`,
    );
  }
  if (isHostedTool(tool) || !isLocalTool(tool)) {
    return invocationFailure(
      "NOT_CALLABLE",
      `Tool "${name}" is run by the model provider, not on this host, and cannot be called from a chain. Call it directly, outside the script.`,
    );
  }
  return tool as unknown as Tool<Record<string, unknown>, unknown>;
}
