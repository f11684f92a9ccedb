/**
 * isochain's public API. The list below is the API: named exports only.
 * @module
 */

// Kernel: the vocabulary.
export * from "./kernel/index.ts";

// Tools.
export { defineTool, type ToolDefinition, type ToolOutput } from "./toolbox/define-tool.ts";
export type { FromSchema } from "./toolbox/from-schema.ts";
export { type NormalizedToolResult, normalizeToolResult } from "./toolbox/normalize-tool-result.ts";
export { Toolbox, type ToolboxFingerprint, type ToolFingerprint } from "./toolbox/toolbox.ts";
export {
  type AnthropicCustomTool,
  type EncodeToolsOptions,
  type GenericToolSchema,
  type OpenAIFunctionTool,
  toAnthropicTools,
  toGenericTools,
  type ToolProvider,
  toOpenAITools,
  toVercelAITools,
  type VercelAITool,
} from "./toolbox/provider-schemas.ts";
export { renderDeclarations, type RenderDeclarationsOptions } from "./toolbox/render-declarations.ts";
export { MAX_SCHEMA_DEPTH } from "./toolbox/assert-valid-tool.ts";
export { CHECKED_FORMATS } from "./toolbox/compile-input-schema.ts";
export { suggestNames } from "./kernel/suggest-names.ts";
export { MAX_RESOLVED_ARGUMENT_CHARS } from "./invoker/gates/resolve-artifact-refs.ts";
export { type Skill, type SkillDefinition, defineSkill, MAX_SKILL_DESCRIPTION_CHARS } from "./skills/skill.ts";
export { loadSkill, loadSkills, MAX_SKILL_FILE_BYTES } from "./skills/load-skill.ts";

// Invoker and manager.
export { type InvokeContext, type InvokeOptions, type OpenSessionOptions, ToolInvoker, type ToolInvokerOptions } from "./invoker/tool-invoker.ts";
export { InvokerSession } from "./invoker/invoker-session.ts";
export {
  type ExecuteSelectedToolsOptions,
  type ForcedToolChoice,
  ToolManager,
  type ToolManagerOptions,
  type ToolManagerToolbox,
} from "./manager/tool-manager.ts";
export type { ToolCallResponse } from "./manager/tool-call-response.ts";

// Stores and approval.
export { MemoryBlobStore, type MemoryBlobStoreOptions } from "./artifacts/memory-blob-store.ts";
export { DEFAULT_BLOB_DIR, FileBlobStore, type FileBlobStoreOptions } from "./artifacts/file-blob-store.ts";
export { type BlobText, blobToText } from "./artifacts/blob-to-text.ts";
export { type ApprovalPolicyFunction, AutoApprovalHandler } from "./approval/auto-approval-handler.ts";
export { CliApprovalHandler, type CliApprovalHandlerOptions } from "./approval/cli-approval-handler.ts";
export {
  DEFAULT_APPROVAL_POLL_INTERVAL_MS,
  QueueApprovalHandler,
  type QueueApprovalHandlerOptions,
} from "./approval/queue-approval-handler.ts";
export type { ApprovalStore } from "./approval/approval-store.ts";
export { MemoryApprovalStore } from "./approval/memory-approval-store.ts";
export { DEFAULT_APPROVAL_DIR, FileApprovalStore, type FileApprovalStoreOptions } from "./approval/file-approval-store.ts";
export { APPROVAL_DECISIONS, isApprovalDecision } from "./approval/check-approval-args.ts";

// Chains.
export { ToolChainTool, type ChainInput, type ChainRunOptions, type ToolChainToolOptions } from "./chain/tool-chain-tool.ts";
export { summarizeRun } from "./chain/summarize-run.ts";
export {
  type CompileFailure,
  type CompileOptions,
  type CompileResult,
  type CompileSuccess,
  compileScript,
  ESBUILD_TIME_LIMIT_MS,
  MAX_SCRIPT_CHARS,
  MAX_SCRIPT_NESTING,
} from "./compile/compile-script.ts";
export { MAX_ESBUILD_ANSWER_BYTES } from "./kernel/esbuild-service.ts";
export type { DriverChoice, PoolChoice } from "./chain/create-driver.ts";
export { isNeverAnswered, MAX_CALLS_PAST_BUDGET, neverAnswered, type SandboxDriver, type SandboxLimits, type SandboxRunOutcome, type SandboxRunRequest } from "../sandbox/sandbox-driver.ts";
export { InProcessSandboxDriver, type InProcessSandboxDriverOptions } from "../sandbox/in-process-driver.ts";
export { ProcessSandboxDriver, type ProcessSandboxDriverOptions } from "../sandbox/process-driver.ts";

// Traces, replay and durable approvals.
export {
  type ChainTrace,
  READABLE_TRACE_FORMAT_VERSIONS,
  TRACE_FORMAT_VERSION,
  type ToolboxFingerprint as TraceToolboxFingerprint,
  type ToolFingerprint as TraceToolFingerprint,
  type TraceCallEntry,
  type TraceCallState,
  type TraceOutcome,
} from "./trace/chain-trace.ts";
export type { TraceEvent, TraceEventType } from "./trace/trace-event.ts";
export { isTraceChainId, type TraceListOptions, type TracePruneOptions, type TraceStore, type TraceSummary, UNREADABLE_RESUME_CLAIM } from "./trace/trace-store.ts";
export { DEFAULT_MAX_OPEN_TRACE_FILES, FileTraceStore, type FileTraceStoreOptions, LIVE_WRITER_EXTENSION, RESUME_CLAIM_EXTENSION, TRACE_FILE_EXTENSION } from "./trace/file-trace-store.ts";
export { MemoryTraceStore } from "./trace/memory-trace-store.ts";
export { TraceRecorder, type TraceRecorderFailure, type TraceRecorderOptions, type TraceStartMeta } from "./trace/trace-recorder.ts";
export { fingerprintToolbox } from "./trace/fingerprint-toolbox.ts";
export { foldTraceEvents, type FoldTraceEventsOptions } from "./trace/fold-trace-events.ts";
export { loadTraceFile, MAX_TRACE_FILE_BYTES } from "./trace/load-trace-file.ts";
export { exportTraceJson } from "./trace/export-trace-json.ts";
export { renderScriptWithMarker, renderTraceTable } from "./trace/render-trace.ts";
export type { ChainTraceError, TracedChainRunResult } from "./chain/traced-chain-run-result.ts";
export { replay, type ReplayOptions, type ReplayReport } from "./chain/replay.ts";
export { suspendedCalls, type InDoubtCall, type InDoubtDecision, type InDoubtResolution, type ReplayDivergence } from "./chain/replay-router.ts";
export { pendingApprovals, resumeChain, type ResumeChainOptions } from "./chain/resume-chain.ts";
export { traceToTest, type TraceToTestOptions } from "./chain/trace-to-test.ts";
export { describeJsonDiff } from "./chain/describe-json-diff.ts";
