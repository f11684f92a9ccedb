import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { basename, dirname, join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { isTempFileName, tempPathFor, writeFileAtomic } from "../../src/artifacts/write-file-atomic.ts";

const root = await mkdtemp(join(tmpdir(), "isochain-atomic-"));
afterAll(() => rm(root, { recursive: true, force: true }));

describe("writeFileAtomic", () => {
  it("writes the whole content and replaces an existing file", async () => {
    const path = join(root, "a.json");
    await writeFile(path, "old");
    await writeFileAtomic(path, "new content");
    expect(await readFile(path, "utf8")).toBe("new content");
    await writeFileAtomic(path, new Uint8Array([104, 105]));
    expect(await readFile(path, "utf8")).toBe("hi");
    expect(await readdir(root)).toEqual(["a.json"]);
  });

  it("removes its temp file and rethrows the fs error when the rename fails", async () => {
    const dir = join(root, "rename-fails");
    const target = join(dir, "target");
    await mkdir(join(target, "child"), { recursive: true });
    await expect(writeFileAtomic(target, "data")).rejects.toMatchObject({ code: expect.stringMatching(/^(EISDIR|ENOTEMPTY|EEXIST|EPERM)$/) });
    expect((await readdir(dir)).filter(isTempFileName)).toEqual([]);
  });

  it("rethrows when the directory does not exist", async () => {
    await expect(writeFileAtomic(join(root, "missing", "f"), "x")).rejects.toMatchObject({ code: "ENOENT" });
  });

  it("names temp files beside the target so isTempFileName knows them", () => {
    const temp = tempPathFor("/some/dir/file.json");
    expect(dirname(temp)).toBe("/some/dir");
    expect(isTempFileName(basename(temp))).toBe(true);
    expect(tempPathFor("/x/f")).not.toBe(tempPathFor("/x/f"));
    expect(isTempFileName("file.json")).toBe(false);
    expect(isTempFileName("a.tmp")).toBe(false);
  });
});
