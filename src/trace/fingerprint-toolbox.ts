import { digestJson, isLocalTool, type AnyTool } from "../kernel/index.ts";
import type { ToolboxFingerprint, ToolFingerprint } from "./chain-trace.ts";

/**
 * The {@link ToolboxFingerprint} of the tools a chain can call: the local tools among `tools`
 * (hosted and provider-defined tools never run from a chain, so they are left out). Each tool's
 * `schemaDigest` covers its description, input and output schemas; `risk` defaults to `"safe"`.
 * The same tools in any order give the same fingerprint. Pure.
 */
export function fingerprintToolbox(tools: Iterable<AnyTool>): ToolboxFingerprint {
  const fingerprints: ToolFingerprint[] = [];
  for (const tool of tools) {
    if (!isLocalTool(tool)) continue;
    fingerprints.push({
      name: tool.name,
      risk: tool.risk ?? "safe",
      schemaDigest: digestJson({
        description: tool.description,
        inputSchema: tool.inputSchema,
        outputSchema: tool.outputSchema,
      }),
    });
  }
  fingerprints.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return { tools: fingerprints, digest: digestJson(fingerprints) };
}
