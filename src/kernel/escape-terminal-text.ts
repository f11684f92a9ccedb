/**
 * The one definition of what text from outside (a script, a tool, a trace, a request) must never
 * reach a terminal raw, shared by the approval prompt and the CLI so the two cannot drift.
 *
 * - C0 controls but tab and newline, DEL and the C1 range (0x80-0x9f, which some terminals read
 *   as escape sequences too): `ESC [ ...` moves the cursor, rewrites earlier lines, retitles the
 *   window.
 * - Bidi controls (U+200E/F, U+061C, U+202A-202E, U+2066-2069): they reorder what is shown, so a
 *   line can read other than what it holds (a recipient, a file name, the tool about to run).
 * - Characters that show as nothing or break the line where a reader does not see one: the soft
 *   hyphen (U+00AD), zero-width space, non-joiner and joiner (U+200B-200D), the word joiner and
 *   invisible operators (U+2060-2064), U+180E, the BOM (U+FEFF), and the line and paragraph
 *   separators (U+2028/9): `ceo@exam\u200bple.com` would read as an address it is not.
 *
 * Each becomes `\uXXXX`, which is also how JSON and JavaScript write it: JSON or source text
 * escaped this way still means the same.
 * @module
 */

const TERMINAL_UNSAFE = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u00ad\u061c\u180e\u200b-\u200f\u2028\u2029\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]/g;

/**
 * `text` with every character a terminal must not get raw (see the module comment) written as
 * `\uXXXX`; tabs, newlines and all other text stay as they are.
 */
export function escapeTerminalText(text: string): string {
  return text.replace(TERMINAL_UNSAFE, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, "0")}`);
}
