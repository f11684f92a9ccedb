import { describeKind } from "../kernel/check-option-shape.ts";
import { ChainRuntimeError, describeThrown, isChainRuntimeError } from "../kernel/index.ts";
import { FILE_TOO_LARGE, NOT_REGULAR_FILE, readRegularFile } from "../kernel/read-regular-file.ts";
import type { ChainTrace } from "./chain-trace.ts";
import { chainTraceProblem } from "./check-chain-trace.ts";
import { foldTraceEvents } from "./fold-trace-events.ts";
import { decodeTraceFrames } from "./trace-frame-codec.ts";

/**
 * Reads a trace log file (as `FileTraceStore` writes them, `<chainId>.trace`) from any path
 * and folds it. A torn final record, left by a crash mid-write, is ignored; calls without a
 * result read `in-doubt`.
 *
 * @throws ChainRuntimeError `TRACE_NOT_FOUND` when there is no file, `TRACE_INVALID` when it
 * is malformed, not a regular file or over {@link MAX_TRACE_FILE_BYTES}, `STORE_FAILED` (with
 * `cause`, its reason in the message) when it cannot be read, `ARGUMENT_INVALID` when `path`
 * is not a non-empty string.
 */
export async function loadTraceFile(path: string): Promise<ChainTrace> {
  if (typeof path !== "string" || path === "") {
    throw new ChainRuntimeError("ARGUMENT_INVALID", `loadTraceFile() needs the path of a .trace file; got ${describeKind(path)}.`, { details: { argument: "path" } });
  }
  const bytes = await readTraceBytes(path);
  let trace: ChainTrace;
  try {
    // A damaged log, or a file that is not one, is refused by the decoder (see its torn-tail rule).
    const { events } = decodeTraceFrames(bytes);
    if (events.length === 0 && bytes.length > 0) throw noWholeRecord(bytes);
    trace = foldTraceEvents(events);
  } catch (error) {
    if (isChainRuntimeError(error) && error.code === "TRACE_INVALID") {
      if (isJsonObjectText(bytes)) throw jsonTraceError(path, bytes, error);
      throw new ChainRuntimeError("TRACE_INVALID", `${path}: ${error.message}`, {
        cause: error,
        details: { ...error.details, path },
      });
    }
    throw error;
  }
  checkLoadedTrace(trace, path);
  return trace;
}

/** The error of a non-empty file that holds no whole record: all zeros, or a first record cut short. */
function noWholeRecord(bytes: Buffer): ChainRuntimeError {
  const zeros = bytes.every((byte) => byte === 0);
  return new ChainRuntimeError(
    "TRACE_INVALID",
    zeros
      ? `The trace log holds no record: its ${bytes.length} bytes are all zeros (a file system's leftover of a write cut short, or not a trace).`
      : `The trace log holds no whole record: its first (the chain's start) is cut short at byte ${bytes.length} (a crash while the chain was starting?).`,
    { details: { bytes: bytes.length, noRecord: true } },
  );
}

/**
 * True when `bytes` begin as a JSON object does: `{`, after an optional byte order mark and
 * whitespace, as a trace exported by `isochain trace export` (`exportTraceJson`) does. Asked only
 * of a file the decoder or the fold refused, so a log is never taken for one.
 */
function isJsonObjectText(bytes: Buffer): boolean {
  let at = bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf ? 3 : 0;
  while (bytes[at] === 0x20 || bytes[at] === 0x09 || bytes[at] === 0x0a || bytes[at] === 0x0d) at++;
  return bytes[at] === 0x7b;
}

/**
 * The `TRACE_INVALID` for a JSON file given as a trace log: most likely a trace exported as JSON,
 * a copy for people and tests (byte arrays and BigInts rewritten) that is not read back: replay
 * and resume read the log a store writes. Names the chain when the text says which near its
 * start, where an export has it.
 */
function jsonTraceError(path: string, bytes: Buffer, cause: ChainRuntimeError): ChainRuntimeError {
  const chainId = /"chainId"\s*:\s*"([A-Za-z0-9_-]{1,128})"/.exec(bytes.toString("utf8", 0, 4096))?.[1];
  const message =
    chainId === undefined
      ? `${path} is JSON (a trace exported by \`isochain trace export\`?), not a trace log, the records a trace store writes and replay reads. ` +
        `Pass the chain id or its .trace file instead.`
      : `${path} is a trace exported as JSON (by \`isochain trace export\`), not a trace log, the records a trace store writes and replay reads. ` +
        `Pass the chain id (${chainId}) or its .trace file (${chainId}.trace in the store's traces folder) instead.`;
  return new ChainRuntimeError("TRACE_INVALID", message, { cause, details: { path, ...(chainId === undefined ? {} : { chainId }) } });
}

/**
 * Throws `TRACE_INVALID` naming `path` and the field unless the folded `trace` is one every
 * reader takes (`checkChainTrace`'s rules: a policy a chain could run under, and so on). Checked
 * here, once, so a hand-made file that folds is refused on loading, as the file it is, and not
 * later by whichever function reads it first, in its own name.
 */
function checkLoadedTrace(trace: ChainTrace, path: string): void {
  const problem = chainTraceProblem(trace);
  if (problem === undefined) return;
  throw new ChainRuntimeError("TRACE_INVALID", `${path}: not a chain trace: ${problem} (a damaged or hand-edited file?).`, {
    details: { path, problem },
  });
}

/**
 * Largest trace file read, bytes (512 MiB): a trace holds records and inline results (large
 * ones are artifacts), so a bigger file is something else, and reading it whole would cost
 * that much memory only to refuse it.
 */
export const MAX_TRACE_FILE_BYTES = 512 * 1024 * 1024;

/**
 * The bytes of the regular file at `path` (errors as {@link loadTraceFile} throws them). Opened
 * without blocking and checked before any read (see `readRegularFile`): a FIFO named `*.trace`
 * would otherwise hold a read (and `trace ls`, and a resume) forever, and `/dev/zero` would never
 * end. A link at `path` is followed (the path is the caller's), and what it names is checked.
 */
export async function readTraceBytes(path: string): Promise<Buffer> {
  try {
    return await readRegularFile(path, { followLinks: true, maxBytes: MAX_TRACE_FILE_BYTES });
  } catch (cause) {
    const code = (cause as { code?: unknown } | null)?.code;
    if (code === "ENOENT") throw new ChainRuntimeError("TRACE_NOT_FOUND", `No trace file at ${path}.`, { cause, details: { path } });
    if (code === NOT_REGULAR_FILE) {
      throw new ChainRuntimeError("TRACE_INVALID", `Not an isochain trace: ${path} is not a regular file.`, { details: { path } });
    }
    if (code === FILE_TOO_LARGE) {
      const bytes = (cause as { bytes?: number }).bytes;
      throw new ChainRuntimeError(
        "TRACE_INVALID",
        `Not an isochain trace: ${path} is ${String(bytes)} bytes, over the ${MAX_TRACE_FILE_BYTES} a trace file is read up to.`,
        { details: { path, bytes } },
      );
    }
    throw new ChainRuntimeError("STORE_FAILED", `Could not read the trace file ${path}: ${describeThrown(cause)}`, { cause, details: { path } });
  }
}
