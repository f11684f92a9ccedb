/**
 * The tool layer: defining tools, holding them (`Toolbox`), encoding them for providers and
 * rendering them as TypeScript declarations for chain scripts.
 * @module
 */
export { MAX_SCHEMA_DEPTH, assertValidTool } from "./assert-valid-tool.ts";
export { defineTool, type ToolDefinition, type ToolOutput } from "./define-tool.ts";
export type { FromSchema } from "./from-schema.ts";
export { normalizeToolResult, type NormalizedToolResult } from "./normalize-tool-result.ts";
export {
  TOOL_PROVIDERS,
  encodeTool,
  encodeTools,
  toAnthropicTools,
  toGenericTools,
  toOpenAITools,
  toVercelAITools,
  type AnthropicCustomTool,
  type EncodeToolsOptions,
  type EncodedTool,
  type GenericToolSchema,
  type OpenAIFunctionTool,
  type ProviderSpec,
  type ProviderToolSchemas,
  type ToolProvider,
  type VercelAITool,
} from "./provider-schemas.ts";
export { INLINE_WIDTH, renderDeclarations, type RenderDeclarationsOptions } from "./render-declarations.ts";
export { toolKind, type ToolKind } from "./tool-kind.ts";
export { Toolbox, type ProviderSchemaList, type ToolFingerprint, type ToolboxFingerprint } from "./toolbox.ts";
