/**
 * What the CLI writes to a terminal, with control characters made visible: a trace file, a
 * script or a tool result can carry `ESC [ ...` sequences, and printing them raw would let that
 * input move the cursor, rewrite earlier lines or retitle the window. Newlines and tabs stay.
 * JSON output needs nothing (JSON escapes every control character).
 * @module
 */

// C0 controls except tab and newline, DEL, and the C1 range (0x80-0x9f, which some terminals
// read as escape sequences too).
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g;

/** `text` with every control character but tab and newline written as `\u00XX`. */
export function terminalText(text: string): string {
  return text.replace(CONTROL, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, "0")}`);
}

/** Writes `text` to stdout, control characters made visible. */
export function writeOut(text: string): void {
  process.stdout.write(terminalText(text));
}

/** Writes `text` to stderr, control characters made visible. */
export function writeErr(text: string): void {
  process.stderr.write(terminalText(text));
}
