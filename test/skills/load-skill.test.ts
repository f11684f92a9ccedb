import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { isChainRuntimeError } from "../../src/kernel/index.ts";
import { loadSkill, loadSkills } from "../../src/skills/load-skill.ts";

let root: string;

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), "isochain-skills-"));
});

afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

async function skillDir(folder: string, text: string | undefined): Promise<string> {
  const dir = join(root, folder);
  await mkdir(dir, { recursive: true });
  if (text !== undefined) await writeFile(join(dir, "SKILL.md"), text);
  return dir;
}

async function errorOf(promise: Promise<unknown>): Promise<{ message: string; details: Readonly<Record<string, unknown>> }> {
  try {
    await promise;
  } catch (error) {
    if (isChainRuntimeError(error) && error.code === "SKILL_INVALID") return error;
    throw error;
  }
  throw new Error("did not throw");
}

const CSV = "---\nname: csv-report\ndescription: Report on a CSV.\nversion: 1.2.0\nallowed-tools: read_csv, summarize\nlicense: MIT\n---\n\n# Steps\nRead the file first.\n";

describe("loadSkill", () => {
  it("reads SKILL.md front matter and instructions", async () => {
    const dir = await skillDir("csv", CSV);
    expect(await loadSkill(dir)).toEqual({
      name: "csv-report",
      description: "Report on a CSV.",
      version: "1.2.0",
      allowedTools: ["read_csv", "summarize"],
      instructions: "# Steps\nRead the file first.",
      path: dir,
    });
  });

  it("defaults version and allowed tools", async () => {
    const skill = await loadSkill(await skillDir("min", "---\nname: min\ndescription: d\n---\nDo it."));
    expect(skill).toMatchObject({ version: "0.0.0", allowedTools: [] });
  });

  it("accepts allowed_tools and * too", async () => {
    const skill = await loadSkill(await skillDir("all", "---\nname: all\ndescription: d\nallowed_tools: *\n---\n"));
    expect(skill.allowedTools).toEqual(["*"]);
  });

  it("names the file when SKILL.md is missing", async () => {
    const dir = await skillDir("empty", undefined);
    const error = await errorOf(loadSkill(dir));
    expect(error.details.file).toBe(join(dir, "SKILL.md"));
    expect(error.message).toMatch(/cannot read the skill file \(ENOENT\)/);
  });

  it("names the file and line of a malformed front matter", async () => {
    const dir = await skillDir("bad", "---\nname: bad\ndescription d\n---\n");
    const error = await errorOf(loadSkill(dir));
    expect(error.details).toMatchObject({ file: join(dir, "SKILL.md"), line: 3 });
    expect(error.message.startsWith(`${join(dir, "SKILL.md")}:3: `)).toBe(true);
  });

  it("names the missing required field", async () => {
    const error = await errorOf(loadSkill(await skillDir("noname", "---\ndescription: d\n---\n")));
    expect(error.details).toMatchObject({ field: "name", line: 1 });
    const empty = await errorOf(loadSkill(await skillDir("nodesc", "---\nname: x\ndescription:\n---\n")));
    expect(empty.details).toMatchObject({ field: "description", line: 3 });
  });

  it("points at the line of an invalid value", async () => {
    const error = await errorOf(loadSkill(await skillDir("badname", "---\ndescription: d\nname: has space\n---\n")));
    expect(error.details).toMatchObject({ field: "name", line: 3 });
    expect(error.message).toMatch(/SKILL\.md:3: /);
  });
});

describe("loadSkills", () => {
  it("loads every subfolder sorted by name, skipping dot-folders and files", async () => {
    await skillDir("b-second", "---\nname: second\ndescription: d\n---\n");
    await skillDir("a-first", "---\nname: first\ndescription: d\n---\n");
    await skillDir(".hidden", undefined);
    await writeFile(join(root, "README.md"), "not a skill");
    const skills = await loadSkills(root);
    expect(skills.map((skill) => skill.name)).toEqual(["first", "second"]);
  });

  it("fails on a subfolder without SKILL.md", async () => {
    await skillDir("ok", "---\nname: ok\ndescription: d\n---\n");
    await skillDir("assets", undefined);
    expect((await errorOf(loadSkills(root))).details.file).toBe(join(root, "assets", "SKILL.md"));
  });

  it("fails on two skills with one name", async () => {
    await skillDir("one", "---\nname: same\ndescription: d\n---\n");
    await skillDir("two", "---\nname: same\ndescription: d\n---\n");
    expect((await errorOf(loadSkills(root))).message).toMatch(/"same" is also used by/);
  });

  it("fails on a missing parent folder", async () => {
    expect((await errorOf(loadSkills(join(root, "nope")))).message).toMatch(/cannot read the skills folder/);
  });
});
