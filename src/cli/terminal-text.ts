/**
 * What the CLI writes to a terminal, made safe to show, and what happens when it cannot be written.
 *
 * - Safe to show: a trace file, a script, a tool result or an error can carry `ESC [ ...`
 *   sequences (which move the cursor, rewrite earlier lines, retitle the window) and bidi
 *   controls (which make a line read other than what it holds). Every write goes through
 *   `escapeTerminalText`, the definition the approval prompt uses too; newlines and tabs stay.
 *   JSON output loses nothing by it: JSON writes those characters `\uXXXX` itself, or reads the
 *   escape back as the same character.
 * - A closed output: when the reader of a pipe goes away (`isochain ... | head`), the next write
 *   fails with EPIPE, which Node reports as an `error` event that crashes the process with a
 *   stack trace unless someone listens. {@link guardOutput} listens: after EPIPE nothing more is
 *   written to that stream and the command ends with the exit code it would have had (a reader
 *   that stopped reading is not a failure of the command, so `set -o pipefail` sees the
 *   command's own result). Any other write error (a full disk, EIO) means output was lost where
 *   someone expected it: {@link outputExitCode} turns the exit code into 2 and says so on stderr.
 * @module
 */
import { describeThrown, escapeTerminalText } from "../index.ts";

/** The first write error of each output stream; a stream in here is written no more. */
const failures = new Map<NodeJS.WriteStream, unknown>();

/** `text` with every character a terminal must not get raw written as `\uXXXX` (see the module comment). */
export function terminalText(text: string): string {
  return escapeTerminalText(text);
}

/** The line breaks {@link terminalText} keeps: a newline, and U+2028 and U+2029, which some terminals and pagers break at. */
const LINE_BREAKS = /[\n\u2028\u2029]/g;

/**
 * `text` as {@link terminalText} writes it, and its line breaks written as `\uXXXX` too: for
 * text that must stay on its line (a table cell, a chain id in a header). A trace field holding
 * a newline would otherwise print as a row or a line of its own, one the trace never had.
 */
export function oneLineText(text: string): string {
  return terminalText(text).replace(LINE_BREAKS, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, "0")}`);
}

/** Writes `text` to stdout, made safe to show; nothing once stdout has failed. */
export function writeOut(text: string): void {
  write(process.stdout, text);
}

/** Writes `text` to stderr, made safe to show; nothing once stderr has failed. */
export function writeErr(text: string): void {
  write(process.stderr, text);
}

function write(stream: NodeJS.WriteStream, text: string): void {
  if (!failures.has(stream)) stream.write(terminalText(text));
}

/** Listens for write errors on stdout and stderr (see the module comment). Call once, first. */
export function guardOutput(): void {
  for (const stream of [process.stdout, process.stderr]) {
    stream.on("error", (error: unknown) => {
      if (!failures.has(stream)) failures.set(stream, error);
    });
  }
}

/**
 * The exit code to end with when the command itself resolved to `code`: `code`, unless a write
 * to stdout or stderr failed other than by EPIPE (then 2, with a note on stderr if it still works).
 */
export function outputExitCode(code: number): number {
  let result = code;
  for (const [stream, error] of failures) {
    if ((error as { code?: unknown } | null)?.code === "EPIPE") continue;
    result = 2;
    writeErr(`isochain: could not write to ${stream === process.stdout ? "stdout" : "stderr"}: ${describeThrown(error)}; the output is incomplete.\n`);
  }
  return result;
}
