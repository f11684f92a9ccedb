/**
 * The one definition of what text from outside (a script, a tool, a trace, a request) must never
 * reach a terminal raw, shared by the approval prompt and the CLI so the two cannot drift.
 *
 * - C0 controls but tab and newline, DEL and the C1 range (0x80-0x9f, which some terminals read
 *   as escape sequences too): `ESC [ ...` moves the cursor, rewrites earlier lines, retitles the
 *   window.
 * - Bidi controls (U+200E/F, U+061C, U+202A-202E, U+2066-2069): they reorder what is shown, so a
 *   line can read other than what it holds (a recipient, a file name, the tool about to run).
 *
 * Each becomes `\uXXXX`, which is also how JSON and JavaScript write it: JSON or source text
 * escaped this way still means the same.
 * @module
 */

const TERMINAL_UNSAFE = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

/**
 * `text` with every character a terminal must not get raw (see the module comment) written as
 * `\uXXXX`; tabs, newlines and all other text stay as they are.
 */
export function escapeTerminalText(text: string): string {
  return text.replace(TERMINAL_UNSAFE, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, "0")}`);
}
