/**
 * A tiny front-matter reader for `SKILL.md`: a `---` line, then `key: value` lines, then `---`,
 * then the body. Not YAML: no nesting, no multi-line values, no escapes in quotes. Anything else
 * is an error with its line.
 *
 * Comments are read as YAML reads them, since the files are written by people used to YAML (and
 * are read by YAML parsers elsewhere): a line whose first non-blank character is `#` is skipped,
 * and an unquoted value ends before a `#` at its start or after a space or tab (`allowed-tools: a # b`
 * is `a`). A `#` inside a word (`C#`) is kept, and so is every `#` inside quotes: a value may be
 * wrapped in matching `"` or `'` (`description: "Fixes issue #42"`), and so may each item of a
 * `[ ]` list, with a comment after the closing quote or bracket.
 * @module
 */
import { ChainRuntimeError } from "../kernel/index.ts";

/** What {@link parseFrontMatter} returns. */
export interface FrontMatter {
  /** The `key: value` pairs, keys as written. */
  readonly fields: ReadonlyMap<string, { readonly value: string; readonly line: number }>;
  /** The text after the closing `---`. */
  readonly body: string;
}

const KEY_VALUE = /^([A-Za-z][A-Za-z0-9_-]*)\s*:(.*)$/;

/**
 * Splits `text` into its front-matter fields and body. `file` only names the source in errors.
 * Throws `ChainRuntimeError` `SKILL_INVALID` (with `details.file` and `details.line`, 1-based)
 * when the block is missing or unclosed, a line is not `key: value`, or a key repeats.
 */
export function parseFrontMatter(text: string, file: string): FrontMatter {
  const lines = text.replace(/^\uFEFF/, "").split(/\r?\n/);
  const fail = (line: number, message: string): never => {
    throw new ChainRuntimeError("SKILL_INVALID", `${file}:${line}: ${message}`, { details: { file, line } });
  };
  if (lines[0]?.trim() !== "---") fail(1, 'expected a front-matter block starting with "---".');
  const fields = new Map<string, { value: string; line: number }>();
  for (let index = 1; index < lines.length; index++) {
    const raw = lines[index] ?? "";
    const line = index + 1;
    const trimmed = raw.trim();
    if (trimmed === "---") {
      return { fields, body: lines.slice(index + 1).join("\n") };
    }
    if (trimmed === "" || trimmed.startsWith("#")) continue;
    if (/^\s/.test(raw)) fail(line, "nested or indented values are not supported; write one `key: value` per line.");
    const match = KEY_VALUE.exec(raw);
    if (match === null) fail(line, `expected \`key: value\`; got ${JSON.stringify(trimmed)}.`);
    const [, key = "", rest = ""] = match ?? [];
    if (fields.has(key)) fail(line, `"${key}" is given twice (first on line ${fields.get(key)?.line}).`);
    fields.set(key, { value: unquote(stripComment(rest.trim())), line });
  }
  return fail(lines.length, 'the front-matter block is not closed with "---".');
}

/**
 * `value` (trimmed) without a trailing ` # comment`, as the module comment says. Quotes count only
 * where YAML opens them: at the start of the value, or of an item of a `[ ]` list (after `[` or
 * `,`), so an apostrophe inside a word (`the user's # note`) does not hide the comment. An
 * unclosed quote runs to the end of the value, which is then kept whole.
 */
function stripComment(value: string): string {
  const flow = value.startsWith("[");
  // The last non-blank character before `index`: whether a quote there opens a flow-list item.
  let previous = "";
  for (let index = 0; index < value.length; index++) {
    const char = value[index];
    if ((char === '"' || char === "'") && (index === 0 || (flow && (previous === "[" || previous === ",")))) {
      const close = value.indexOf(char, index + 1);
      if (close === -1) return value;
      index = close;
      previous = char;
      continue;
    }
    if (char === "#" && (index === 0 || isBlank(value[index - 1]))) return value.slice(0, index).trimEnd();
    if (!isBlank(char)) previous = char ?? "";
  }
  return value;
}

/** Whether `char` is a space or a tab: the blanks YAML wants before a comment's `#`. */
function isBlank(char: string | undefined): boolean {
  return char === " " || char === "\t";
}

/** `value` without one pair of matching `"` or `'` around all of it. */
function unquote(value: string): string {
  const first = value[0];
  if (value.length >= 2 && (first === '"' || first === "'") && value.endsWith(first)) return value.slice(1, -1);
  return value;
}

/** Splits a comma list (`a, b, c`, optionally in `[ ]`) into unquoted, trimmed (also inside quotes), non-empty items. */
export function parseCommaList(value: string): string[] {
  const inner = value.startsWith("[") && value.endsWith("]") ? value.slice(1, -1) : value;
  return inner
    .split(",")
    .map((item) => unquote(item.trim()).trim())
    .filter((item) => item !== "");
}
