/**
 * `Skill`: a prompt package. When active, its `instructions` join the system prompt and its
 * `allowedTools` narrow which tools a chain can see and call (`Toolbox.withSkill`).
 * @module
 */
import { ChainRuntimeError } from "../kernel/index.ts";

/** A prompt package: instructions plus the tools it may use. */
export interface Skill {
  /** Unique name; see {@link SKILL_NAME_PATTERN}. */
  readonly name: string;
  /** Prompt text appended to the system prompt while the skill is active. */
  readonly instructions: string;
  /** What the skill is for, in one line. */
  readonly description: string;
  /** Tool names usable while the skill is active. `["*"]` allows every tool; `[]` allows none. */
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

/** What a skill name may look like: letters, digits, `_`, `.` and `-`, starting with a letter or digit; at most 64. */
export const SKILL_NAME_PATTERN: RegExp = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;

/**
 * Checks a skill and returns it frozen, with defaults filled in.
 * Throws `ChainRuntimeError` `SKILL_INVALID` (with `details.field`) when the name does not match
 * {@link SKILL_NAME_PATTERN}, a text field is not a string, `version` is empty or blank, or
 * `allowedTools` is not an array of non-blank strings.
 */
export function defineSkill(definition: SkillDefinition): Skill {
  const fail = (field: string, message: string): never => {
    throw new ChainRuntimeError("SKILL_INVALID", `Skill ${JSON.stringify(definition.name) ?? "?"}: ${field} ${message}`, {
      details: { field },
    });
  };
  if (typeof definition !== "object" || definition === null) {
    throw new ChainRuntimeError("SKILL_INVALID", "A skill definition must be an object.", { details: { field: "skill" } });
  }
  const { name, instructions, description, allowedTools = [], version = "0.0.0", path } = definition;
  if (typeof name !== "string" || !SKILL_NAME_PATTERN.test(name)) fail("name", `must match ${String(SKILL_NAME_PATTERN)}.`);
  if (typeof instructions !== "string") fail("instructions", "must be a string.");
  if (typeof description !== "string") fail("description", "must be a string.");
  if (typeof version !== "string" || version.trim() === "") fail("version", "must be a non-empty string.");
  if (!Array.isArray(allowedTools) || !allowedTools.every((tool) => typeof tool === "string" && tool.trim() !== "")) {
    fail("allowedTools", "must be an array of non-empty tool names.");
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
