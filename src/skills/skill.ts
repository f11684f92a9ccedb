/**
 * `Skill`: a prompt package. When active, its `instructions` join the system prompt and its
 * `allowedTools` narrow which tools a chain can see and call (`Toolbox.withSkill`).
 * @module
 */
import { ChainRuntimeError, escapeTerminalText, TOOL_NAME_PATTERN } from "../kernel/index.ts";
import { clipText } from "../kernel/bound-error-text.ts";
import { unknownField } from "../kernel/check-option-shape.ts";

/** A prompt package: instructions plus the tools it may use. */
export interface Skill {
  /** Unique name; see {@link SKILL_NAME_PATTERN}. */
  readonly name: string;
  /** Prompt text appended to the system prompt while the skill is active. */
  readonly instructions: string;
  /**
   * What the skill is for, in one line of at most {@link MAX_SKILL_DESCRIPTION_CHARS}, with no
   * control characters (tab aside), line breaks or bidi controls.
   */
  readonly description: string;
  /**
   * Tool names usable while the skill is active, each a tool name (`TOOL_NAME_PATTERN`). `["*"]`
   * allows every tool; `[]` allows none.
   */
  readonly allowedTools: readonly string[];
  /** e.g. `"1.0.0"`. */
  readonly version: string;
  /** The folder the skill was loaded from, when it came from disk. */
  readonly path?: string;
}

/** The input of {@link defineSkill}: a {@link Skill} whose `allowedTools` and `version` may be left out. */
export interface SkillDefinition {
  readonly name: string;
  readonly instructions: string;
  readonly description: string;
  /** @defaultValue `[]` (no tools) */
  readonly allowedTools?: readonly string[];
  /** @defaultValue `"0.0.0"` */
  readonly version?: string;
  readonly path?: string;
}

/** Every field of {@link SkillDefinition}. */
const SKILL_FIELDS = ["name", "instructions", "description", "allowedTools", "version", "path"] as const;

/** What a skill name may look like: letters, digits, `_`, `.` and `-`, starting with a letter or digit; at most 64. */
export const SKILL_NAME_PATTERN: RegExp = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;

/**
 * Longest `description`, characters (UTF-16 code units, as `String.length` counts): 4096. A
 * description says what the skill is for and goes into every prompt that lists skills, and into
 * CLI output; the detail belongs in the instructions. Four times the 1024 that the Agent Skills
 * `SKILL.md` format allows, so every skill written for that format fits.
 */
export const MAX_SKILL_DESCRIPTION_CHARS = 4096;

/** Longest `allowedTools` item a message quotes, characters (a tool name is at most 64). */
const MAX_QUOTED_ITEM_CHARS = 100;

/** Line breaks besides `\n` and `\r` (which are control characters): a one-line text holds none. */
const LINE_SEPARATORS = new Set(["\u2028", "\u2029"]);

/**
 * Checks a skill and returns it frozen, with defaults filled in.
 * Throws `ChainRuntimeError` `SKILL_INVALID` (with `details.field`) when the name does not match
 * {@link SKILL_NAME_PATTERN}, a text field is not a string, `version` is empty or blank, the
 * description is over {@link MAX_SKILL_DESCRIPTION_CHARS}, the description or version holds a
 * control character (tab aside), a line break or a bidi control (`details.index`, `details.codePoint`),
 * or `allowedTools` is not an array of `"*"` and tool names (`details.item`), or the definition
 * has a field a skill does not (`allowedtools`: the tools would be silently left out).
 */
export function defineSkill(definition: SkillDefinition): Skill {
  const fail = (field: string, message: string, details: Record<string, unknown> = {}): never => {
    throw new ChainRuntimeError("SKILL_INVALID", `Skill ${JSON.stringify(definition.name) ?? "?"}: ${field} ${message}`, {
      details: { field, ...details },
    });
  };
  if (typeof definition !== "object" || definition === null) {
    throw new ChainRuntimeError("SKILL_INVALID", "A skill definition must be an object.", { details: { field: "skill" } });
  }
  const unknown = unknownField(definition, SKILL_FIELDS);
  if (unknown !== undefined) {
    throw new ChainRuntimeError("SKILL_INVALID", `Skill ${JSON.stringify(definition.name) ?? "?"}: defineSkill() has no field ${unknown.says}`, {
      details: { field: unknown.key },
    });
  }
  const { name, instructions, description, allowedTools = [], version = "0.0.0", path } = definition;
  if (typeof name !== "string" || !SKILL_NAME_PATTERN.test(name)) fail("name", `must match ${String(SKILL_NAME_PATTERN)}.`);
  if (typeof instructions !== "string") fail("instructions", "must be a string.");
  if (typeof description !== "string") fail("description", "must be a string.");
  if (typeof version !== "string" || version.trim() === "") fail("version", "must be a non-empty string.");
  if (description.length > MAX_SKILL_DESCRIPTION_CHARS) {
    fail(
      "description",
      `is ${description.length} characters, over the ${MAX_SKILL_DESCRIPTION_CHARS} a description may hold: ` +
        "say in one line what the skill is for, and put the detail in its instructions.",
      { chars: description.length, maxChars: MAX_SKILL_DESCRIPTION_CHARS },
    );
  }
  for (const [field, text] of [["description", description], ["version", version]] as const) {
    const index = firstUnsafeChar(text);
    if (index === -1) continue;
    const codePoint = text.codePointAt(index) ?? 0;
    const hex = `U+${codePoint.toString(16).toUpperCase().padStart(4, "0")}`;
    fail(
      field,
      `holds ${hex} (${unsafeKind(codePoint)}) at character ${index + 1}; control characters other than tab, line breaks ` +
        `and bidi controls are refused, since the ${field} goes into model prompts and terminal output.`,
      { index, codePoint },
    );
  }
  if (!Array.isArray(allowedTools) || !allowedTools.every((tool) => typeof tool === "string" && tool.trim() !== "")) {
    fail("allowedTools", "must be an array of non-empty tool names.");
  }
  const notName = allowedTools.find((tool) => tool !== "*" && !TOOL_NAME_PATTERN.test(tool));
  if (notName !== undefined) {
    const item = clipText(notName, MAX_QUOTED_ITEM_CHARS);
    fail("allowedTools", `item ${JSON.stringify(item)} is not a tool name: each item is "*" or matches ${String(TOOL_NAME_PATTERN)}.`, { item });
  }
  if (path !== undefined && typeof path !== "string") fail("path", "must be a string when given.");
  return Object.freeze({
    name,
    instructions,
    description,
    allowedTools: Object.freeze([...new Set(allowedTools)]),
    version,
    ...(path === undefined ? {} : { path }),
  });
}

/**
 * The index of the first character of `text` that a one-line text for prompts and terminals must
 * not hold, or -1: what the kernel's `escapeTerminalText` escapes (C0 and C1 controls but tab and
 * newline, DEL, bidi controls; the one definition the CLI and the approval prompt share), and
 * newline, U+2028 and U+2029 too, which would break the line.
 */
function firstUnsafeChar(text: string): number {
  for (let index = 0; index < text.length; index++) {
    const char = text[index] ?? "";
    if (char === "\n" || LINE_SEPARATORS.has(char) || escapeTerminalText(char) !== char) return index;
  }
  return -1;
}

/** What kind of character {@link firstUnsafeChar} refused, for the message. */
function unsafeKind(codePoint: number): string {
  if (codePoint === 0x0a || codePoint === 0x0d || LINE_SEPARATORS.has(String.fromCharCode(codePoint))) return "a line break";
  return codePoint < 0x20 || (codePoint >= 0x7f && codePoint <= 0x9f) ? "a control character" : "a bidi control";
}
