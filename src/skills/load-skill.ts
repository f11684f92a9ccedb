/**
 * Skills from disk: one folder per skill, holding `SKILL.md`:
 *
 * ```md
 * ---
 * name: csv-report
 * description: Turn a CSV into a short report.
 * version: 1.2.0
 * allowed-tools: read_csv, summarize
 * ---
 * <instructions, the rest of the file>
 * ```
 *
 * `name` and `description` are required; `version` defaults to `"0.0.0"`; `allowed-tools`
 * (also `allowed_tools` or `allowedTools`) defaults to none, `*` allows all. Other keys are
 * ignored (room for `license` and friends). Instructions are the body, trimmed.
 * @module
 */
import { readFile, readdir } from "node:fs/promises";
import { join, resolve } from "node:path";
import { ChainRuntimeError, isChainRuntimeError } from "../kernel/index.ts";
import { parseCommaList, parseFrontMatter } from "./parse-front-matter.ts";
import { defineSkill, type Skill } from "./skill.ts";

/** The file a skill folder must hold. */
export const SKILL_FILE = "SKILL.md";

const ALLOWED_TOOLS_KEYS = ["allowed-tools", "allowed_tools", "allowedTools"];

/**
 * Loads the skill in folder `dir` (its `path` is the absolute folder).
 * Throws `ChainRuntimeError` `SKILL_INVALID` naming the file (and line, when one is at fault)
 * when `SKILL.md` is missing or unreadable, its front matter is malformed, or a required field
 * is missing or invalid.
 */
export async function loadSkill(dir: string): Promise<Skill> {
  const path = resolve(dir);
  const file = join(path, SKILL_FILE);
  let text: string;
  try {
    text = await readFile(file, "utf8");
  } catch (error) {
    throw new ChainRuntimeError("SKILL_INVALID", `${file}: cannot read the skill file (${(error as NodeJS.ErrnoException).code ?? "error"}).`, {
      details: { file },
      cause: error,
    });
  }
  const { fields, body } = parseFrontMatter(text, file);
  const required = (key: string): string => {
    const field = fields.get(key);
    if (field === undefined || field.value === "") {
      throw new ChainRuntimeError("SKILL_INVALID", `${file}:${field?.line ?? 1}: the front matter needs a non-empty "${key}".`, {
        details: { file, line: field?.line ?? 1, field: key },
      });
    }
    return field.value;
  };
  const name = required("name");
  const description = required("description");
  const version = fields.get("version");
  const toolsKey = ALLOWED_TOOLS_KEYS.find((key) => fields.has(key));
  const toolsField = toolsKey === undefined ? undefined : fields.get(toolsKey);
  try {
    return defineSkill({
      name,
      description,
      instructions: body.trim(),
      allowedTools: toolsField === undefined ? [] : parseCommaList(toolsField.value),
      ...(version === undefined ? {} : { version: version.value }),
      path,
    });
  } catch (error) {
    if (!isChainRuntimeError(error)) throw error;
    const field = String(error.details.field);
    const key = field === "allowedTools" ? toolsKey : field;
    const line = (key === undefined ? undefined : fields.get(key)?.line) ?? 1;
    throw new ChainRuntimeError("SKILL_INVALID", `${file}:${line}: ${error.message}`, { details: { file, line, field }, cause: error });
  }
}

/**
 * Loads every skill folder under `parentDir`, sorted by folder name. Folders whose name starts
 * with `.` are skipped; files are ignored. Throws `ChainRuntimeError` `SKILL_INVALID` when
 * `parentDir` cannot be read, a folder is not a valid skill, or two skills share a name.
 */
export async function loadSkills(parentDir: string): Promise<Skill[]> {
  const root = resolve(parentDir);
  let entries;
  try {
    entries = await readdir(root, { withFileTypes: true });
  } catch (error) {
    throw new ChainRuntimeError("SKILL_INVALID", `${root}: cannot read the skills folder.`, { details: { file: root }, cause: error });
  }
  const folders = entries
    .filter((entry) => entry.isDirectory() && !entry.name.startsWith("."))
    .map((entry) => entry.name)
    .sort();
  const skills = await Promise.all(folders.map((folder) => loadSkill(join(root, folder))));
  const byName = new Map<string, Skill>();
  for (const skill of skills) {
    const other = byName.get(skill.name);
    if (other !== undefined) {
      throw new ChainRuntimeError("SKILL_INVALID", `${join(skill.path ?? "", SKILL_FILE)}: the skill name "${skill.name}" is also used by ${other.path ?? "?"}.`, {
        details: { file: join(skill.path ?? "", SKILL_FILE), field: "name" },
      });
    }
    byName.set(skill.name, skill);
  }
  return skills;
}
