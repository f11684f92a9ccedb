import { compareToolNames, digestJson, isLocalTool, type AnyTool, type Tool } from "../kernel/index.ts";
import type { ToolboxFingerprint, ToolFingerprint } from "./chain-trace.ts";

/** A tool's `schemaDigest`, with the values it was taken of (compared by identity). */
interface CachedSchemaDigest {
  readonly description: unknown;
  readonly inputSchema: unknown;
  readonly outputSchema: unknown;
  readonly digest: string;
}

/**
 * Schema digests by tool object. A traced chain fingerprints its toolbox at every start, and
 * the canonical JSON and SHA-256 of every tool's schemas cost ~5 µs a tool (a 50-tool chain paid
 * ~240 µs a run, measured). A digest is kept while the tool object and the description and
 * schema objects it was taken of stay the same (see {@link fingerprintToolbox}).
 */
const schemaDigests = new WeakMap<object, CachedSchemaDigest>();

/** The last toolbox digest, by the `name`, `risk` and `schemaDigest` of each tool it covered. */
let lastDigest: { readonly key: string; readonly digest: string } | undefined;

function schemaDigestOf(tool: Tool<never, unknown>): string {
  const { description, inputSchema, outputSchema } = tool;
  const cached = schemaDigests.get(tool);
  if (cached !== undefined && cached.description === description && cached.inputSchema === inputSchema && cached.outputSchema === outputSchema) {
    return cached.digest;
  }
  const digest = digestJson({ description, inputSchema, outputSchema });
  schemaDigests.set(tool, { description, inputSchema, outputSchema, digest });
  return digest;
}

/**
 * The {@link ToolboxFingerprint} of the tools a chain can call: the local tools among `tools`
 * (hosted and provider-defined tools never run from a chain, so they are left out). Each tool's
 * `schemaDigest` covers its description, input and output schemas; `risk` defaults to `"safe"`.
 * The same tools in any order give the same fingerprint; each call returns new objects.
 *
 * A tool's `schemaDigest` is taken once per tool object and description and schema objects:
 * like the invoker's argument validator (compiled once per tool), it does not follow a schema
 * edited in place. Change a tool by defining a new one, or by giving it new schema objects.
 */
export function fingerprintToolbox(tools: Iterable<AnyTool>): ToolboxFingerprint {
  const fingerprints: ToolFingerprint[] = [];
  for (const tool of tools) {
    if (!isLocalTool(tool)) continue;
    fingerprints.push({ name: tool.name, risk: tool.risk ?? "safe", schemaDigest: schemaDigestOf(tool) });
  }
  fingerprints.sort((a, b) => compareToolNames(a.name, b.name));
  // Length-prefixed fields: the key names the list exactly, whatever the names hold.
  let key = "";
  for (const { name, risk, schemaDigest } of fingerprints) key += `${name.length}:${name}${risk.length}:${risk}${schemaDigest.length}:${schemaDigest}`;
  let digest = lastDigest?.key === key ? lastDigest.digest : undefined;
  if (digest === undefined) {
    digest = digestJson(fingerprints);
    lastDigest = { key, digest };
  }
  return { tools: fingerprints, digest };
}
