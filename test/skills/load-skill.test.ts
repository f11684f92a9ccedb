import { execFileSync } from "node:child_process";
import { constants } from "node:fs";
import { mkdir, mkdtemp, open, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { describe, expect, it } from "vitest";
import { MAX_SKILL_FILE_BYTES, loadSkill, loadSkills } from "../../src/skills/load-skill.ts";
import { skillErrorOf, skillFolders } from "./skill-folders.ts";

const folders = skillFolders("isochain-skills-");
const skillDir = folders.skillDir;
const errorOf = skillErrorOf;

/** Makes a FIFO at `path` and runs `run`; then opens the FIFO for writing, which ends an open blocked on it (so the worker can exit). */
async function withFifo(path: string, run: () => Promise<void>): Promise<void> {
  execFileSync("mkfifo", [path]);
  try {
    await run();
  } finally {
    await (await open(path, constants.O_WRONLY | constants.O_NONBLOCK).catch(() => undefined))?.close();
  }
}

/** `promise`'s outcome, or "still pending" when it takes more than two seconds. */
async function settledSoon<T>(promise: Promise<T>): Promise<T | "still pending"> {
  return Promise.race([promise, sleep(2_000, "still pending" as const)]);
}

const unix = process.platform !== "win32";

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
  it.runIf(unix)("refuses a FIFO named SKILL.md at once instead of waiting for a writer", async () => {
    const dir = await skillDir("fifo", undefined);
    const file = join(dir, "SKILL.md");
    await withFifo(file, async () => {
      const error = await settledSoon(errorOf(loadSkill(dir)));
      expect(error).not.toBe("still pending");
      expect(error).toMatchObject({ details: { file, fileType: "FIFO" } });
      expect((error as { message: string }).message).toBe(`${file}: the skill file is a FIFO, not a regular file.`);
      expect(await settledSoon(errorOf(loadSkills(folders.root)))).toMatchObject({ details: { file, fileType: "FIFO" } });
    });
  });

  it("refuses a directory named SKILL.md", async () => {
    const dir = await skillDir("folder", undefined);
    await mkdir(join(dir, "SKILL.md"));
    const error = await errorOf(loadSkill(dir));
    expect(error.message).toMatch(/SKILL\.md: the skill file is a directory, not a regular file\.$/);
  });

  it("refuses a SKILL.md over MAX_SKILL_FILE_BYTES (1 MiB), and reads one at the limit", async () => {
    expect(MAX_SKILL_FILE_BYTES).toBe(1024 * 1024);
    const head = "---\nname: big\ndescription: d\n---\n";
    const atLimit = head + "x".repeat(MAX_SKILL_FILE_BYTES - head.length);
    const dir = await skillDir("big", atLimit);
    expect((await loadSkill(dir)).instructions).toHaveLength(MAX_SKILL_FILE_BYTES - head.length);
    await writeFile(join(dir, "SKILL.md"), `${atLimit}x`);
    const error = await errorOf(loadSkill(dir));
    expect(error.details).toMatchObject({ file: join(dir, "SKILL.md"), bytes: MAX_SKILL_FILE_BYTES + 1, maxBytes: MAX_SKILL_FILE_BYTES });
    expect(error.message).toMatch(/SKILL\.md: the skill file is 1048577 bytes, over the 1048576 \(1 MiB\) a skill file is read up to\.$/);
  });

  it.runIf(unix)("refuses a SKILL.md that is a symbolic link, without reading what it points to", async () => {
    const secret = join(folders.root, "secret.md");
    await writeFile(secret, "---\nname: secret\ndescription: leak\n---\nTOP SECRET\n");
    const skills = join(folders.root, "skills");
    const dir = join(skills, "a");
    await mkdir(dir, { recursive: true });
    await symlink(join("..", "..", "secret.md"), join(dir, "SKILL.md"));
    const error = await errorOf(loadSkill(dir));
    expect(error.details).toMatchObject({ file: join(dir, "SKILL.md"), fileType: "symbolic link" });
    expect(error.message).toMatch(/SKILL\.md: the skill file is a symbolic link; links are not followed/);
    expect(error.message).not.toMatch(/secret|SECRET/);
    expect((await errorOf(loadSkills(skills))).details.file).toBe(join(dir, "SKILL.md"));
  });

  it.runIf(unix)("follows a link given as the folder itself (the caller's own path)", async () => {
    const dir = await skillDir("real", "---\nname: real\ndescription: d\n---\n");
    await symlink(dir, join(folders.root, "alias"));
    expect(await loadSkill(join(folders.root, "alias"))).toMatchObject({ name: "real", path: join(folders.root, "alias") });
  });

  it("refuses a blank name or description, quoted or not, and trims them", async () => {
    const blank = await errorOf(loadSkill(await skillDir("blank", '---\nname: blank\ndescription: "  "\n---\n')));
    expect(blank.details).toMatchObject({ field: "description", line: 3 });
    expect(blank.message).toMatch(/SKILL\.md:3: the front matter needs a non-empty "description"\.$/);
    const tab = await errorOf(loadSkill(await skillDir("tab", "---\nname: tab\ndescription: '\t'\n---\n")));
    expect(tab.details).toMatchObject({ field: "description", line: 3 });
    const name = await errorOf(loadSkill(await skillDir("noname2", "---\ndescription: d\nname: ' '\n---\n")));
    expect(name.details).toMatchObject({ field: "name", line: 3 });
    expect(name.message).toMatch(/needs a non-empty "name"/);
    const version = await errorOf(loadSkill(await skillDir("nover", '---\nname: v\ndescription: d\nversion: " "\n---\n')));
    expect(version.details).toMatchObject({ field: "version", line: 4 });
    const tools = await loadSkill(await skillDir("tools", '---\nname: t\ndescription: d\nallowed-tools: [" ", read, " write "]\n---\n'));
    expect(tools.allowedTools).toEqual(["read", "write"]);
    const padded = await loadSkill(await skillDir("padded", '---\nname: " padded "\ndescription: "  Report.  "\nversion: " 1.0.0 "\n---\n'));
    expect(padded).toMatchObject({ name: "padded", description: "Report.", version: "1.0.0" });
  });

  it.each([
    ["allowed-tools", "allowedTools"],
    ["allowed_tools", "allowed-tools"],
    ["allowedTools", "allowed_tools"],
  ])("refuses %s and %s in one front matter", async (first, second) => {
    const dir = await skillDir(`${first}-${second}`, `---\nname: b\ndescription: d\n${first}: read\n${second}: "*"\n---\nb\n`);
    const error = await errorOf(loadSkill(dir));
    expect(error.details).toMatchObject({ file: join(dir, "SKILL.md"), line: 5, field: "allowedTools" });
    expect(error.message).toBe(`${join(dir, "SKILL.md")}:5: "${first}" and "${second}" are the same field; give it once (first on line 4).`);
  });
});

describe("loadSkills", () => {
  it("loads every subfolder sorted by name, skipping dot-folders and files", async () => {
    await skillDir("b-second", "---\nname: second\ndescription: d\n---\n");
    await skillDir("a-first", "---\nname: first\ndescription: d\n---\n");
    await skillDir(".hidden", undefined);
    await writeFile(join(folders.root, "README.md"), "not a skill");
    const skills = await loadSkills(folders.root);
    expect(skills.map((skill) => skill.name)).toEqual(["first", "second"]);
  });

  it("fails on a subfolder without SKILL.md", async () => {
    await skillDir("ok", "---\nname: ok\ndescription: d\n---\n");
    await skillDir("assets", undefined);
    expect((await errorOf(loadSkills(folders.root))).details.file).toBe(join(folders.root, "assets", "SKILL.md"));
  });

  it("fails on two skills with one name", async () => {
    await skillDir("one", "---\nname: same\ndescription: d\n---\n");
    await skillDir("two", "---\nname: same\ndescription: d\n---\n");
    expect((await errorOf(loadSkills(folders.root))).message).toMatch(/"same" is also used by/);
  });

  it.runIf(unix)("fails on a symbolic link to a folder, inside or outside the skills folder, naming the link", async () => {
    const outside = await mkdtemp(join(tmpdir(), "isochain-skills-outside-"));
    try {
      await writeFile(join(outside, "SKILL.md"), "---\nname: linked\ndescription: from elsewhere\n---\nbody\n");
      const skills = join(folders.root, "skills");
      await mkdir(skills);
      await symlink(outside, join(skills, "linked"));
      const error = await errorOf(loadSkills(skills));
      expect(error.details).toMatchObject({ file: join(skills, "linked"), fileType: "symbolic link" });
      expect(error.message).toMatch(/linked: a symbolic link to a folder; skill folders are not followed through links/);
      await rm(join(skills, "linked"));
      await mkdir(join(skills, "real"));
      await writeFile(join(skills, "real", "SKILL.md"), "---\nname: real\ndescription: d\n---\n");
      await symlink("real", join(skills, "alias"));
      expect((await errorOf(loadSkills(skills))).details.file).toBe(join(skills, "alias"));
    } finally {
      await rm(outside, { recursive: true, force: true });
    }
  });

  it.runIf(unix)("ignores links to files, dangling links, dot-named links and FIFOs, as it ignores files", async () => {
    await skillDir("ok", "---\nname: ok\ndescription: d\n---\n");
    await writeFile(join(folders.root, "notes.md"), "not a skill");
    await symlink("notes.md", join(folders.root, "notes-link.md"));
    await symlink("nowhere", join(folders.root, "dangling"));
    await symlink("ok", join(folders.root, ".hidden-link"));
    await withFifo(join(folders.root, "pipe"), async () => {
      expect(await settledSoon(loadSkills(folders.root).then((skills) => skills.map((skill) => skill.name)))).toEqual(["ok"]);
    });
  });

  it("fails on a missing parent folder", async () => {
    expect((await errorOf(loadSkills(join(folders.root, "nope")))).message).toMatch(/cannot read the skills folder/);
  });
});
