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
 * (also `allowed_tools` or `allowedTools`, one spelling per file) defaults to none, `*` allows
 * all. `name`, `description` and `version` are trimmed, also inside quotes, and a blank one
 * (`""`, `"  "`) is an error; blank items of `allowed-tools` are dropped, and every other item
 * must be a tool name. `defineSkill` checks the fields (the description's length and characters
 * too); its refusals name the line of the field. Other keys are ignored (room for `license` and
 * friends), except one that looks like a misspelt known key (`Name`, `descripton`, `tools`):
 * ignoring it would leave the field it meant unset, so it is an error at its own line with a
 * "did you mean" (see {@link misspeltKey}). Instructions are the body, trimmed.
 *
 * Invariants (the text read here goes into a model's prompt):
 * - `SKILL.md` must be a regular file of at most {@link MAX_SKILL_FILE_BYTES} (1 MiB), read with
 *   `readRegularFile`: a FIFO, device or directory named `SKILL.md` is refused without blocking,
 *   and a symbolic link named `SKILL.md` is refused, not followed (it could pull in text from
 *   anywhere on the disk). Each is `SKILL_INVALID` naming the file and why.
 * - It must be UTF-8 (a BOM is allowed): invalid UTF-8 is refused at its line, never replaced
 *   with U+FFFD, and UTF-16 or UTF-32 is refused as such (`decodeSkillText`).
 * - `loadSkills` follows no links either: a symbolic link to a folder in the skills folder is
 *   `SKILL_INVALID` (not skipped, so a skill never goes missing in silence); put the folder itself
 *   there, or pass the link to `loadSkill`. The folder given to `loadSkill` / `loadSkills` is the
 *   caller's own path: a link there, or above it, is followed.
 * - In the skills folder, entries whose name starts with `.` are skipped; everything that is not
 *   a folder or a link to one (files, links to files, dangling links, FIFOs) is ignored unread.
 * @module
 */
import { readdir, stat } from "node:fs/promises";
import { join, resolve } from "node:path";
import { ChainRuntimeError, isChainRuntimeError } from "../kernel/index.ts";
import { FILE_TOO_LARGE, NOT_REGULAR_FILE, readRegularFile } from "../kernel/read-regular-file.ts";
import { editDistance } from "../kernel/suggest-names.ts";
import { decodeSkillText } from "./decode-skill-text.ts";
import { parseCommaList, parseFrontMatter } from "./parse-front-matter.ts";
import { defineSkill, type Skill } from "./skill.ts";

/** The file a skill folder must hold. */
export const SKILL_FILE = "SKILL.md";

/**
 * Largest `SKILL.md` read, bytes (1 MiB): instructions for a model's prompt are a few pages, so
 * a bigger file is a mistake, and reading it whole would put all of it into the prompt.
 */
export const MAX_SKILL_FILE_BYTES = 1024 * 1024;

/** The spellings of the `allowedTools` field; a file may use one of them, once. */
const ALLOWED_TOOLS_KEYS = ["allowed-tools", "allowed_tools", "allowedTools"];

/** The keys this loader reads, in the spelling a "did you mean" suggests (other spellings of `allowed-tools` aside). */
const KNOWN_KEYS = ["name", "description", "version", "allowed-tools"];

/**
 * Loads the skill in folder `dir` (its `path` is the absolute folder).
 * Throws `ChainRuntimeError` `SKILL_INVALID` naming the file (and line, when one is at fault)
 * when `SKILL.md` is missing or unreadable, is not a regular file (a FIFO, a directory, a
 * symbolic link), is over {@link MAX_SKILL_FILE_BYTES} or is not UTF-8, its front matter is
 * malformed, has a key that looks like a misspelt known one or gives `allowed-tools` under two
 * spellings, or a required field is missing, blank or invalid (see `defineSkill`).
 */
export async function loadSkill(dir: string): Promise<Skill> {
  const path = resolve(dir);
  const file = join(path, SKILL_FILE);
  const text = await readSkillFile(file);
  const { fields, body } = parseFrontMatter(text, file);
  // Before the required fields: a missing "name" is more likely the "Name" on line 2 than an omission.
  for (const [key, { line }] of [...fields].sort((a, b) => a[1].line - b[1].line)) {
    const meant = misspeltKey(key);
    if (meant === undefined) continue;
    const caseOnly = meant.toLowerCase() === key.toLowerCase();
    throw new ChainRuntimeError(
      "SKILL_INVALID",
      `${file}:${line}: unknown key "${key}"; did you mean "${meant}"?${caseOnly ? " Keys are case-sensitive." : ""}`,
      { details: { file, line, key, suggestion: meant } },
    );
  }
  const required = (key: string): string => {
    const field = fields.get(key);
    const value = field?.value.trim() ?? "";
    if (value === "") {
      throw new ChainRuntimeError("SKILL_INVALID", `${file}:${field?.line ?? 1}: the front matter needs a non-empty "${key}".`, {
        details: { file, line: field?.line ?? 1, field: key },
      });
    }
    return value;
  };
  const name = required("name");
  const description = required("description");
  const version = fields.get("version");
  const toolsKeys = ALLOWED_TOOLS_KEYS.filter((key) => fields.has(key)).sort((a, b) => (fields.get(a)?.line ?? 0) - (fields.get(b)?.line ?? 0));
  const [toolsKey, otherToolsKey] = toolsKeys;
  if (toolsKey !== undefined && otherToolsKey !== undefined) {
    const first = fields.get(toolsKey)?.line ?? 1;
    const line = fields.get(otherToolsKey)?.line ?? 1;
    throw new ChainRuntimeError(
      "SKILL_INVALID",
      `${file}:${line}: "${toolsKey}" and "${otherToolsKey}" are the same field; give it once (first on line ${first}).`,
      { details: { file, line, field: "allowedTools" } },
    );
  }
  const toolsField = toolsKey === undefined ? undefined : fields.get(toolsKey);
  try {
    return defineSkill({
      name,
      description,
      instructions: body.trim(),
      allowedTools: toolsField === undefined ? [] : parseCommaList(toolsField.value),
      ...(version === undefined ? {} : { version: version.value.trim() }),
      path,
    });
  } catch (error) {
    if (!isChainRuntimeError(error)) throw error;
    const field = String(error.details.field);
    const key = field === "allowedTools" ? toolsKey : field;
    const line = (key === undefined ? undefined : fields.get(key)?.line) ?? 1;
    throw new ChainRuntimeError("SKILL_INVALID", `${file}:${line}: ${error.message}`, { details: { ...error.details, file, line, field }, cause: error });
  }
}

/**
 * The text of the skill file `file`, read as the module comment says (regular file, no link,
 * at most {@link MAX_SKILL_FILE_BYTES}); anything else is `SKILL_INVALID` naming the file and why.
 */
async function readSkillFile(file: string): Promise<string> {
  let content: Uint8Array;
  try {
    content = await readRegularFile(file, { maxBytes: MAX_SKILL_FILE_BYTES });
  } catch (error) {
    const { code, fileType, bytes } = (error ?? {}) as { code?: unknown; fileType?: unknown; bytes?: unknown };
    let reason: string;
    let extra: Record<string, unknown> = {};
    if (code === NOT_REGULAR_FILE && fileType === "symbolic link") {
      reason = "the skill file is a symbolic link; links are not followed, so put the file itself in the skill folder.";
      extra = { fileType };
    } else if (code === NOT_REGULAR_FILE) {
      reason = `the skill file is a ${String(fileType ?? "special file")}, not a regular file.`;
      extra = { fileType };
    } else if (code === FILE_TOO_LARGE) {
      reason = `the skill file is ${String(bytes)} bytes, over the ${MAX_SKILL_FILE_BYTES} (1 MiB) a skill file is read up to.`;
      extra = { bytes, maxBytes: MAX_SKILL_FILE_BYTES };
    } else {
      reason = `cannot read the skill file (${typeof code === "string" ? code : "error"}).`;
    }
    throw new ChainRuntimeError("SKILL_INVALID", `${file}: ${reason}`, { details: { file, ...extra }, cause: error });
  }
  return decodeSkillText(content, file);
}

/**
 * The known key that `key`, not itself known, looks like a misspelling of, or undefined for a key
 * of its own (`license`, `metadata`, which are ignored). Compared in lower case without `-` and
 * `_`: equal (`Name`, `Allowed_Tools`), within one edit (two for keys of seven letters or more:
 * `nme`, `descripton`, `verison`), or, from four letters, the start or end of one (`desc`,
 * `tools`). Tighter than the "did you mean" of tool names, since a false match here refuses a
 * file: `date`, `note` and `model` are not taken for `name`.
 */
function misspeltKey(key: string): string | undefined {
  if (KNOWN_KEYS.includes(key) || ALLOWED_TOOLS_KEYS.includes(key)) return undefined;
  const normal = (text: string): string => text.toLowerCase().replace(/[-_]/g, "");
  const wanted = normal(key);
  return KNOWN_KEYS.find((known) => {
    const candidate = normal(known);
    const limit = candidate.length >= 7 ? 2 : 1;
    if (editDistance(wanted, candidate, limit) <= limit) return true;
    return wanted.length >= 4 && (candidate.startsWith(wanted) || candidate.endsWith(wanted));
  });
}

/**
 * Loads every skill folder under `parentDir`, sorted by folder name. Entries whose name starts
 * with `.` are skipped; files are ignored (see the module comment for links and other entries).
 * Throws `ChainRuntimeError` `SKILL_INVALID` when `parentDir` cannot be read, an entry is a
 * symbolic link to a folder, a folder is not a valid skill (the first such folder by name is
 * reported), or two skills share a name.
 */
export async function loadSkills(parentDir: string): Promise<Skill[]> {
  const root = resolve(parentDir);
  let entries;
  try {
    entries = await readdir(root, { withFileTypes: true });
  } catch (error) {
    throw new ChainRuntimeError("SKILL_INVALID", `${root}: cannot read the skills folder.`, { details: { file: root }, cause: error });
  }
  const names = entries
    .filter((entry) => !entry.name.startsWith(".") && (entry.isDirectory() || entry.isSymbolicLink()))
    .map((entry) => ({ name: entry.name, isLink: entry.isSymbolicLink() }))
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const results = await Promise.allSettled(names.map(({ name, isLink }) => (isLink ? refuseLinkedFolder(join(root, name)) : loadSkill(join(root, name)))));
  const skills: Skill[] = [];
  for (const result of results) {
    if (result.status === "rejected") throw result.reason as Error;
    if (result.value !== undefined) skills.push(result.value);
  }
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

/** Throws `SKILL_INVALID` when the link `link` names a folder; a link to anything else is ignored like a file. */
async function refuseLinkedFolder(link: string): Promise<undefined> {
  const isFolder = await stat(link).then((stats) => stats.isDirectory(), () => false);
  if (isFolder) {
    throw new ChainRuntimeError(
      "SKILL_INVALID",
      `${link}: a symbolic link to a folder; skill folders are not followed through links, so put the folder itself here (or load it with loadSkill).`,
      { details: { file: link, fileType: "symbolic link" } },
    );
  }
  return undefined;
}
