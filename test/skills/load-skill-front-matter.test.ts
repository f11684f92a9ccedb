// loadSkill against files a person saved in the wrong encoding or wrote with YAML habits, and
// descriptions that must not reach a prompt or a terminal raw.
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { loadSkill } from "../../src/skills/load-skill.ts";
import { skillErrorOf, skillFolders } from "./skill-folders.ts";

const folders = skillFolders("isochain-skills-text-");
const skillDir = folders.skillDir;
const errorOf = skillErrorOf;

/** A SKILL.md with `front` as its front-matter lines. */
const skillText = (front: string): string => `---\n${front}\n---\nDo things.\n`;

describe("loadSkill encodings", () => {
  it("refuses a Latin-1 file naming the file, line and byte instead of loading U+FFFD", async () => {
    const dir = await skillDir("latin1", Buffer.from(skillText("name: l\ndescription: caf\xe9 cr\xe8me"), "latin1"));
    const file = join(dir, "SKILL.md");
    const error = await errorOf(loadSkill(dir));
    expect(error.details).toEqual({ file, line: 3, offset: 28, byte: 0xe9 });
    expect(error.message).toMatch(new RegExp(`^${file.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}:3: the skill file is not valid UTF-8: byte 0xE9 at offset 28 .*Save the file as UTF-8`));
  });

  it("refuses a UTF-16 file saying it is UTF-16, not that the front matter is missing", async () => {
    const withBom = await skillDir("utf16", Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(skillText("name: u\ndescription: d"), "utf16le")]));
    const error = await errorOf(loadSkill(withBom));
    expect(error.details).toEqual({ file: join(withBom, "SKILL.md"), encoding: "UTF-16LE" });
    expect(error.message).toMatch(/SKILL\.md: the skill file is UTF-16LE \(by its byte-order mark\); a skill file must be UTF-8, so save it as UTF-8\.$/);
    expect(error.message).not.toMatch(/front-matter/);
    const bigEndian = await skillDir("utf16be", Buffer.concat([Buffer.from([0xfe, 0xff]), Buffer.from(skillText("name: u\ndescription: d"), "utf16le").swap16()]));
    expect((await errorOf(loadSkill(bigEndian))).details).toMatchObject({ encoding: "UTF-16BE" });
  });

  it("still reads UTF-8 with a BOM, and accented text", async () => {
    const dir = await skillDir("bom", `\uFEFF${skillText("name: bom\ndescription: café crème")}`);
    expect(await loadSkill(dir)).toMatchObject({ name: "bom", description: "café crème", instructions: "Do things." });
  });
});

describe("loadSkill comments and allowed-tools items", () => {
  it("strips ` # comment` from unquoted values and keeps # inside quotes", async () => {
    const dir = await skillDir("comments", skillText("name: ic # the id\ndescription: real # not part of it\nallowed-tools: a, b # c\nversion: '1.0 #2' # quoted"));
    expect(await loadSkill(dir)).toMatchObject({ name: "ic", description: "real", allowedTools: ["a", "b"], version: "1.0 #2" });
    const quoted = await skillDir("quoted", skillText('name: q\ndescription: "Fixes issue #42" # why\nallowed-tools: [read_csv] # only this'));
    expect(await loadSkill(quoted)).toMatchObject({ description: "Fixes issue #42", allowedTools: ["read_csv"] });
  });

  it("refuses an allowed-tools item that is not a tool name, naming the file, line and item", async () => {
    const dir = await skillDir("bad-item", skillText("name: b\ndescription: d\nallowed-tools: read_csv, summarize all # both"));
    const file = join(dir, "SKILL.md");
    const error = await errorOf(loadSkill(dir));
    expect(error.details).toMatchObject({ file, line: 4, field: "allowedTools", item: "summarize all" });
    expect(error.message).toMatch(/SKILL\.md:4: Skill "b": allowedTools item "summarize all" is not a tool name: each item is "\*" or matches /);
    const spaced = await skillDir("spaced", skillText("name: s\ndescription: d\nallowed_tools: read csv"));
    expect((await errorOf(loadSkill(spaced))).details).toMatchObject({ line: 4, item: "read csv" });
  });
});

describe("loadSkill keys", () => {
  it.each([
    ["Name: kc\ndescription: d", 2, "Name", "name", true],
    ["name: kc\nDescription: d", 3, "Description", "description", true],
    ["name: kc\ndescription: d\nAllowed-Tools: a", 4, "Allowed-Tools", "allowed-tools", true],
    ["nme: kc\ndescription: d", 2, "nme", "name", false],
    ["name: kc\ndescripton: d", 3, "descripton", "description", false],
    ["name: kc\ndesc: d", 3, "desc", "description", false],
    ["name: kc\ndescription: d\nverison: 1.0.0", 4, "verison", "version", false],
    ["name: kc\ndescription: d\ntools: read_csv", 4, "tools", "allowed-tools", false],
    ["name: kc\ndescription: d\nallowed-tool: read_csv", 4, "allowed-tool", "allowed-tools", false],
  ])("reports the near-miss key in %j at its own line with a suggestion", async (front, line, key, suggestion, caseOnly) => {
    const dir = await skillDir("keys", skillText(front));
    const error = await errorOf(loadSkill(dir));
    expect(error.details).toEqual({ file: join(dir, "SKILL.md"), line, key, suggestion });
    expect(error.message).toBe(`${join(dir, "SKILL.md")}:${line}: unknown key "${key}"; did you mean "${suggestion}"?${caseOnly ? " Keys are case-sensitive." : ""}`);
  });

  it("still ignores other unknown keys", async () => {
    const front = "name: k\ndescription: d\nlicense: MIT\nmetadata: x\ndate: 2024-01-01\nnote: n\nmodel: m\ntags: a\ncompatibility: any";
    expect(await loadSkill(await skillDir("other", skillText(front)))).toMatchObject({ name: "k", description: "d" });
  });
});

describe("loadSkill descriptions for prompts and terminals", () => {
  it.each([
    ["NUL", "a\u0000b", 0x0, 2],
    ["ANSI escapes", "\u001b[31mred\u001b[0m", 0x1b, 1],
    ["a right-to-left override", "see \u202Etxt.exe", 0x202e, 5],
    ["a C1 control", "a\u009bb", 0x9b, 2],
  ])("refuses %s in the description at its line", async (_label, description, codePoint, character) => {
    const dir = await skillDir("ctrl", skillText(`name: cc\ndescription: ${description}`));
    const error = await errorOf(loadSkill(dir));
    expect(error.details).toEqual({ file: join(dir, "SKILL.md"), line: 3, field: "description", index: character - 1, codePoint });
    expect(error.message).toMatch(new RegExp(`SKILL\\.md:3: Skill "cc": description holds U\\+${codePoint.toString(16).toUpperCase().padStart(4, "0")} \\(.*\\) at character ${character};`));
  });

  it("refuses a 1 MB description on one line with a clear message, at its line", async () => {
    const dir = await skillDir("huge", skillText(`name: hl\nversion: 1.0.0\ndescription: ${"d".repeat(1_000_000)}`));
    const error = await errorOf(loadSkill(dir));
    expect(error.details).toMatchObject({ line: 4, field: "description", chars: 1_000_000, maxChars: 4096 });
    expect(error.message).toMatch(/SKILL\.md:4: Skill "hl": description is 1000000 characters, over the 4096 a description may hold/);
  });

  it("keeps tabs in a description", async () => {
    expect((await loadSkill(await skillDir("tab", skillText("name: t\ndescription: a\tb")))).description).toBe("a\tb");
  });
});
