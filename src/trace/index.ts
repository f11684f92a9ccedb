/**
 * Traces: what happened in a chain, as an append-only event log per chain id, and the stores
 * that keep it. Replay reads these logs (wired up in `src/chain`).
 * @module
 */
export {
  READABLE_TRACE_FORMAT_VERSIONS,
  TRACE_FORMAT_VERSION,
  type ChainTrace,
  type ToolboxFingerprint,
  type ToolFingerprint,
  type TraceCallEntry,
  type TraceCallState,
  type TraceOutcome,
} from "./chain-trace.ts";
export { exportTraceJson } from "./export-trace-json.ts";
export { DEFAULT_MAX_OPEN_TRACE_FILES, FileTraceStore, LIVE_WRITER_EXTENSION, RESUME_CLAIM_EXTENSION, TRACE_FILE_EXTENSION, type FileTraceStoreOptions } from "./file-trace-store.ts";
export { fingerprintToolbox } from "./fingerprint-toolbox.ts";
export { foldTraceEvents, type FoldTraceEventsOptions } from "./fold-trace-events.ts";
export { loadTraceFile, MAX_TRACE_FILE_BYTES } from "./load-trace-file.ts";
export { MemoryTraceStore } from "./memory-trace-store.ts";
export { renderScriptWithMarker, renderTraceTable } from "./render-trace.ts";
export {
  assertTraceEvent,
  isDurableTraceEvent,
  isTraceEvent,
  TRACE_EVENT_TYPES,
  type TraceApprovalRequestEvent,
  type TraceChainEndEvent,
  type TraceChainStartEvent,
  type TraceEvent,
  type TraceEventType,
  type TraceToolCallEvent,
  type TraceToolResultEvent,
} from "./trace-event.ts";
export {
  decodeTraceFrames,
  encodeTraceFrame,
  TRACE_FRAME_HEADER_BYTES,
  type DecodedTraceFrames,
} from "./trace-frame-codec.ts";
export {
  TraceRecorder,
  type TraceRecorderFailure,
  type TraceRecorderOptions,
  type TraceStartMeta,
} from "./trace-recorder.ts";
export {
  assertTraceChainId,
  isTraceChainId,
  orderTraceSummaries,
  selectTracesToPrune,
  summarizeTrace,
  type TraceListOptions,
  type TracePruneOptions,
  type TraceStore,
  type TraceSummary,
  UNREADABLE_RESUME_CLAIM,
} from "./trace-store.ts";
