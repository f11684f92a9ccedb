/**
 * A tiny front-matter reader for `SKILL.md`: a `---` line, then `key: value` lines, then `---`,
 * then the body. Not YAML: no nesting, no multi-line values. Blank lines and `#` comments are
 * skipped; a value may be wrapped in matching `"` or `'`. Anything else is an error with its line.
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
    fields.set(key, { value: unquote(rest.trim()), line });
  }
  return fail(lines.length, 'the front-matter block is not closed with "---".');
}

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
