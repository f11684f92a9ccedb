/**
 * Bounds on the text of an error a script throws. Every field is script-controlled (a script may
 * throw `{ name, message, stack }` of any size), so each is cut where it first reaches the host:
 * in the sandbox runner (the sandbox child would otherwise have to send it whole) and again
 * when the chain maps it. The cuts are idempotent: a text cut once passes the second cut as it
 * is, so the counts in its markers stay those of the original.
 * @module
 */

/** Longest error name kept, characters; the rest is cut with a marker. */
export const MAX_ERROR_NAME_CHARS = 200;
/** Longest error message kept, characters; the rest is cut with a marker. */
export const MAX_ERROR_MESSAGE_CHARS = 4096;
/** Stack lines kept; later lines are replaced by one marker line. */
export const MAX_STACK_LINES = 100;
/** Longest stack line kept, characters. */
export const MAX_STACK_LINE_CHARS = 1000;

/** The marker a cut appends, as a pattern (what {@link clipText} recognises as already cut). */
const CUT_MARKER = /… \[\d+ more characters\]$/u;
const STACK_CUT_LINE = /^ {4}… \[stack cut: \d+ more characters\]$/u;

/** `text` up to `max` characters, the rest replaced by `… [N more characters]`; never half a surrogate pair. */
export function clipText(text: string, max: number): string {
  if (text.length <= max || isCut(text, max)) return text;
  let head = text.slice(0, max);
  const last = head.charCodeAt(head.length - 1);
  if (last >= 0xd800 && last <= 0xdbff) head = head.slice(0, -1);
  // Joined, not concatenated: a slice or a concatenation keeps the whole original alive (V8's
  // sliced and cons strings), which a cut of a 40 MB name must not.
  return [head, `… [${text.length - head.length} more characters]`].join("");
}

function isCut(text: string, max: number): boolean {
  // "… [" + up to 16 digits + " more characters]": at most 36 characters past the head.
  return text.length <= max + 36 && CUT_MARKER.test(text) && text.lastIndexOf("… [") <= max;
}

/** The first {@link MAX_STACK_LINES} lines of `stack`, each clipped, then one marker line for the rest. */
export function boundStack(stack: string): string {
  if (stack.length <= MAX_STACK_LINE_CHARS && stack.indexOf("\n") < 0) return stack;
  const lines: string[] = [];
  let start = 0;
  while (start <= stack.length && lines.length < MAX_STACK_LINES) {
    let end = stack.indexOf("\n", start);
    if (end < 0) end = stack.length;
    lines.push(clipText(stack.slice(start, end), MAX_STACK_LINE_CHARS));
    start = end + 1;
  }
  if (start < stack.length) {
    const rest = stack.slice(start);
    lines.push(STACK_CUT_LINE.test(rest) ? rest : `    … [stack cut: ${stack.length - start} more characters]`);
  }
  // join copies: no line keeps the original stack alive.
  return lines.join("\n");
}
