import {
  describeThrown,
  isMediaBlock,
  type ArtifactRef,
  type AudioBlock,
  type ChainFile,
  type ContentBlock,
  type ImageBlock,
  type InvocationResult,
} from "../../kernel/index.ts";
import { handOverBytes } from "../../kernel/blob-handover.ts";
import { clipText } from "../../kernel/bound-error-text.ts";
import { encodeUtf8 } from "../../kernel/encode-utf8.ts";
import { normalizeToolResult } from "../../toolbox/normalize-tool-result.ts";
import { invocationFailure } from "../invocation-failure.ts";
import type { SessionState } from "../invoker-session.ts";

/** Characters of an offloaded result, or of a failure too large to keep inline, kept as its preview. */
export const PREVIEW_CHARS = 512;

/** One encoder for every offloaded text. */

const EXTENSIONS: Readonly<Record<string, string>> = Object.freeze({
  "image/png": "png",
  "image/jpeg": "jpg",
  "image/jpg": "jpg",
  "image/gif": "gif",
  "image/webp": "webp",
  "image/svg+xml": "svg",
  "audio/mpeg": "mp3",
  "audio/mp3": "mp3",
  "audio/wav": "wav",
  "audio/x-wav": "wav",
  "audio/wave": "wav",
  "audio/ogg": "ogg",
});

/** The file extension for a media MIME type: png, jpg, gif, webp, svg, mp3, wav, ogg, else bin. */
export function mediaExtension(mimeType: string): string {
  const base = mimeType.split(";", 1)[0]?.trim().toLowerCase() ?? "";
  return EXTENSIONS[base] ?? "bin";
}

/**
 * Gate 9, result shaping: turns what `execute` returned into the {@link InvocationResult} the
 * script sees.
 *
 * - Not a result (undefined, cyclic, BigInt...): `RESULT_INVALID`. `isError: true`:
 *   `TOOL_FAILED` with the tool's text (and `structured`), under the size rules below.
 * - Media blocks (image, audio): stored in the blob store, pinned for the session, and listed
 *   as `files` at `/workspace/media/<tool>_<n>.<ext>` (`n` counts per tool per session from 0).
 *   Without a store they stay out of the store and the text says so. A failure's media are
 *   not kept.
 * - `text`: the text blocks (and resource texts) joined by newlines, or the JSON of
 *   `structuredContent` when there is no text.
 * - Inline when the UTF-8 size of text plus the JSON of `structured` (counted once when the text
 *   is that JSON) is at most `maxInlineResultBytes`, or when there is no store. Otherwise the
 *   full result is stored (plain text as `text/plain`; the structured JSON, or
 *   `{ text, structured }` when both differ, as `application/json`), pinned, and the result is
 *   `ok` with a preview, `artifactRef` and `bytes`; a failure stays `TOOL_FAILED`, with that
 *   preview, `artifactRef` and `bytes`, without `structured`.
 * - Without a store, a result over {@link MAX_RESULT_BYTES_WITHOUT_STORE} is `RESULT_INVALID`;
 *   a failure that large stays `TOOL_FAILED`, its text cut to {@link PREVIEW_CHARS} characters
 *   with a marker saying how much was cut, without `structured`.
 * - A store failure after the tool ran is `STORE_FAILED`, and says the tool did run.
 */
export async function shapeResult(value: unknown, tool: string, state: SessionState): Promise<InvocationResult> {
  const normalized = normalizeToolResult(value);
  if (!normalized.ok) {
    return invocationFailure("RESULT_INVALID", `Tool "${tool}" ran but returned something that is not a result: ${normalized.reason}`);
  }
  const result = normalized.result;
  const failed = result.isError === true;
  const structured = result.structuredContent;
  const store = state.blobStore;
  const textParts: string[] = [];
  let media: (ImageBlock | AudioBlock)[] | undefined;
  for (const block of result.content as readonly ContentBlock[]) {
    if (block.type === "text") textParts.push(block.text);
    else if (block.type === "resource") textParts.push(block.text ?? `[resource ${block.uri}]`);
    else if (isMediaBlock(block)) (media ??= []).push(block);
  }

  // Each becomes a `files` entry (or a line of text without a store) that no size limit sees: their
  // number is bounded instead (60 000 blocks brought 60 MB into the isolate past a 1 KB limit).
  if (media && media.length > MAX_RESULT_FILES) {
    return invocationFailure(
      "RESULT_INVALID",
      `Tool "${tool}" ran but returned ${media.length} image or audio blocks; at most ${MAX_RESULT_FILES} are kept per result: have the tool return fewer (or one archive).`,
    );
  }
  let files: ChainFile[] | undefined;
  // A failure has no `files` to list media in: stored, they would be pinned and unreachable.
  if (media && !failed) {
    if (store) {
      try {
        files = [];
        for (const block of media) files.push(await storeMedia(block, tool, state));
      } catch (error) {
        return storeFailed(tool, error);
      }
    } else {
      for (const block of media) {
        textParts.push(`[${block.type} ${block.mimeType}, ${base64Bytes(block.data)} bytes: not kept, no blob store is configured]`);
      }
    }
  }

  const structuredJson = structured ? (normalized.structuredJson ?? safeJson(structured)) : undefined;
  let text = textParts.join("\n");
  const textIsStructured = text === "" && structuredJson !== undefined;
  if (textIsStructured) text = structuredJson;
  const sameAsStructured = textIsStructured || (structuredJson !== undefined && text === structuredJson);
  const limit = state.policy.maxInlineResultBytes;
  const separateJson = sameAsStructured ? undefined : structuredJson;
  if (!store && !fitsInline(text, separateJson, MAX_RESULT_BYTES_WITHOUT_STORE)) {
    // Without a store the whole result goes inline: into a script's isolate (whose heap it would
    // fill: the in-process run dies) or through the sandbox pipe (over its frame limit), and into
    // the trace. Refused here, so the script and the trace see the same answer. A failure is
    // cut instead: its start usually says what went wrong, and it stays the tool's own failure.
    if (failed) return toolFailed(tool, cutFailure(text, separateJson));
    return invocationFailure(
      "RESULT_INVALID",
      `Tool "${tool}" ran but its result is over ${MAX_RESULT_BYTES_WITHOUT_STORE} bytes, the most kept inline when no blob store is ` +
        "configured: configure a blobStore (large results then become artifacts), or have the tool return less.",
    );
  }
  if (!store || fitsInline(text, separateJson, limit)) {
    if (failed) return toolFailed(tool, text || "(no message)", structured);
    return {
      status: "ok",
      text: text === "" && files ? describeFiles(files) : text,
      ...(structured ? { structured } : {}),
      ...(files ? { files } : {}),
    };
  }

  let blob: string;
  let mimeType: string;
  if (structuredJson === undefined) {
    blob = text;
    mimeType = "text/plain; charset=utf-8";
  } else if (sameAsStructured) {
    blob = structuredJson;
    mimeType = "application/json";
  } else {
    blob = JSON.stringify({ text, structured });
    mimeType = "application/json";
  }
  // Encoded once here: the store gets the UTF-8 bytes it would have made from the string, given
  // away (the built-in stores keep them instead of copying), and their count is the result's
  // `bytes`, without a second pass over a large text.
  const encoded = encodeUtf8(blob);
  const bytes = encoded.length;
  let ref: ArtifactRef;
  try {
    ref = await store.put(handOverBytes(encoded), { mimeType, name: tool });
    await state.pin(ref);
  } catch (error) {
    return storeFailed(tool, error);
  }
  if (failed) return { ...toolFailed(tool, preview(text, bytes, ref)), artifactRef: ref, bytes };
  return {
    status: "ok",
    text: preview(text, bytes, ref),
    artifactRef: ref,
    bytes,
    ...(files ? { files } : {}),
  };
}

/**
 * Largest result (UTF-8 bytes of its text and structured JSON) kept inline when there is no blob
 * store to offload it to: 16 MiB, well inside a sandbox's heap and pipe frame.
 */
export const MAX_RESULT_BYTES_WITHOUT_STORE = 16 * 1024 * 1024;

/** Most image and audio blocks one result may hold (each is a `files` entry the script gets). */
export const MAX_RESULT_FILES = 100;

function fitsInline(text: string, structuredJson: string | undefined, limit: number): boolean {
  const chars = text.length + (structuredJson?.length ?? 0);
  if (chars * 3 <= limit) return true; // no UTF-16 unit takes more than 3 UTF-8 bytes
  if (chars > limit) return false; // every unit takes at least 1 byte
  return Buffer.byteLength(text, "utf8") + (structuredJson ? Buffer.byteLength(structuredJson, "utf8") : 0) <= limit;
}

/** The first {@link PREVIEW_CHARS} characters (never half a surrogate pair) and where the rest is. */
function preview(text: string, bytes: number, ref: ArtifactRef): string {
  let head = text.slice(0, PREVIEW_CHARS);
  const last = head.charCodeAt(head.length - 1);
  if (head.length < text.length && last >= 0xd800 && last <= 0xdbff) head = head.slice(0, -1);
  return `${head}… [${bytes} bytes offloaded to artifact ${ref}]`;
}

async function storeMedia(block: ImageBlock | AudioBlock, tool: string, state: SessionState): Promise<ChainFile> {
  const store = state.blobStore;
  if (!store) throw new Error("no blob store");
  const decoded = Buffer.from(block.data, "base64");
  const bytes = decoded.byteLength;
  const n = state.nextMediaIndex(tool);
  const path = `/workspace/media/${safeFileStem(tool)}_${n}.${mediaExtension(block.mimeType)}`;
  const artifactRef = await store.put(handOverBytes(decoded), { mimeType: block.mimeType, name: path });
  await state.pin(artifactRef);
  return { path, artifactRef, mimeType: block.mimeType, bytes };
}

function describeFiles(files: readonly ChainFile[]): string {
  return files.map((file) => `[file ${file.path} (${file.mimeType}, ${file.bytes} bytes)]`).join("\n");
}

function safeFileStem(tool: string): string {
  return tool.replace(/[^A-Za-z0-9._-]/g, "_") || "tool";
}

function base64Bytes(data: string): number {
  return Buffer.byteLength(data, "base64");
}

function safeJson(value: unknown): string {
  try {
    return JSON.stringify(value) ?? "";
  } catch {
    return "";
  }
}

/** The `TOOL_FAILED` result of a tool that returned `isError: true`, `text` already shaped. */
function toolFailed(tool: string, text: string, structured?: Readonly<Record<string, unknown>>): InvocationResult {
  return {
    status: "error",
    code: "TOOL_FAILED",
    text: `Tool "${tool}" reported a failure: ${text}`,
    ...(structured ? { structured } : {}),
  };
}

/** A failure too large to keep inline without a store: the first {@link PREVIEW_CHARS} characters of its text, and its size. */
function cutFailure(text: string, structuredJson: string | undefined): string {
  const bytes = Buffer.byteLength(text, "utf8") + (structuredJson ? Buffer.byteLength(structuredJson, "utf8") : 0);
  return (
    `${clipText(text, PREVIEW_CHARS)} [the failure is ${bytes} bytes${structuredJson ? " with its structuredContent" : ""}, ` +
    `over the ${MAX_RESULT_BYTES_WITHOUT_STORE} kept inline when no blob store is configured: only this much is kept]`
  );
}

function storeFailed(tool: string, error: unknown): InvocationResult {
  return invocationFailure(
    "STORE_FAILED",
    `Tool "${tool}" ran, but its result could not be stored: ${describeThrown(error).replace(/\.$/, "")}. Do not repeat the call blindly: it may have had side effects.`,
  );
}
