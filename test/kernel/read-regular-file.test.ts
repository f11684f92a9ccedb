// Tests of src/kernel/read-regular-file.ts, the shared reader the blob store uses (kept beside
// the blob store's tests while the trace and approval stores still have their own copies).
import { execFileSync } from "node:child_process";
import { constants, existsSync } from "node:fs";
import { mkdir, mkdtemp, open, rm, symlink, truncate, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { FILE_TOO_LARGE, NOT_REGULAR_FILE, readRegularFile } from "../../src/kernel/read-regular-file.ts";

const root = await mkdtemp(join(tmpdir(), "isochain-read-regular-"));
afterAll(() => rm(root, { recursive: true, force: true }));

/** The error `promise` rejects with (failing the test when it resolves or takes over 2 s). */
async function failureOf(promise: Promise<unknown>): Promise<{ code?: string; fileType?: string; bytes?: number; message: string }> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const hung = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error("still pending after 2 s")), 2_000);
  });
  try {
    await Promise.race([promise, hung]);
  } catch (error) {
    return error as { code?: string; message: string };
  } finally {
    clearTimeout(timer);
  }
  throw new Error("expected a rejection");
}

describe("readRegularFile", () => {
  it("reads a regular file whole, into memory of its own", async () => {
    const path = join(root, "plain");
    await writeFile(path, "some bytes");
    const bytes = await readRegularFile(path);
    expect(bytes.toString("utf8")).toBe("some bytes");
    expect(bytes.buffer.byteLength).toBe(bytes.byteLength); // not a slice of Node's shared pool
    await writeFile(join(root, "empty"), "");
    expect((await readRegularFile(join(root, "empty"))).byteLength).toBe(0);
  });

  it("passes fs errors through as they are", async () => {
    await expect(readRegularFile(join(root, "missing"))).rejects.toMatchObject({ code: "ENOENT" });
  });

  it("refuses a directory with ENOTREG", async () => {
    await mkdir(join(root, "folder"));
    const error = await failureOf(readRegularFile(join(root, "folder")));
    expect(error).toMatchObject({ code: NOT_REGULAR_FILE, fileType: "directory" });
    expect(error.message).toBe(`${join(root, "folder")} is a directory, not a regular file`);
  });

  it("refuses a file over maxBytes with EFBIG before reading it", async () => {
    const path = join(root, "sparse");
    await writeFile(path, "");
    await truncate(path, 2 ** 40); // a terabyte, sparse: reading it would not end soon
    expect(await failureOf(readRegularFile(path, { maxBytes: 1024 }))).toMatchObject({ code: FILE_TOO_LARGE, bytes: 2 ** 40 });
    await writeFile(path, "1234");
    expect((await readRegularFile(path, { maxBytes: 4 })).toString()).toBe("1234");
  });

  it.skipIf(process.platform === "win32")("opens a FIFO without waiting for a writer, and refuses it with ENOTREG", async () => {
    const fifo = join(root, "pipe");
    execFileSync("mkfifo", [fifo]);
    try {
      expect(await failureOf(readRegularFile(fifo))).toMatchObject({ code: NOT_REGULAR_FILE, fileType: "FIFO" });
    } finally {
      // Had the open blocked, this ends it so the worker can exit.
      await (await open(fifo, constants.O_WRONLY | constants.O_NONBLOCK).catch(() => undefined))?.close();
    }
  });

  it.skipIf(process.platform === "win32")("refuses a symbolic link unless followLinks, and then checks what it points to", async () => {
    const target = join(root, "target");
    await writeFile(target, "behind a link");
    await symlink(target, join(root, "link"));
    const error = await failureOf(readRegularFile(join(root, "link")));
    expect(error).toMatchObject({ code: NOT_REGULAR_FILE, fileType: "symbolic link" });
    expect((await readRegularFile(join(root, "link"), { followLinks: true })).toString()).toBe("behind a link");
    execFileSync("mkfifo", [join(root, "linked-pipe")]);
    await symlink(join(root, "linked-pipe"), join(root, "link-to-pipe"));
    expect(await failureOf(readRegularFile(join(root, "link-to-pipe"), { followLinks: true }))).toMatchObject({ fileType: "FIFO" });
    await symlink(join(root, "loop-b"), join(root, "loop-a"));
    await symlink(join(root, "loop-a"), join(root, "loop-b"));
    expect(await failureOf(readRegularFile(join(root, "loop-a")))).toMatchObject({ code: NOT_REGULAR_FILE });
    expect(await failureOf(readRegularFile(join(root, "loop-a"), { followLinks: true }))).toMatchObject({ code: "ELOOP" });
  });

  it.skipIf(!existsSync("/proc/self/status"))("reads a file whose size fstat does not tell (procfs) to its end, within maxBytes", async () => {
    const text = (await readRegularFile("/proc/self/status")).toString("utf8");
    expect(text).toMatch(/^Name:/);
    expect(await failureOf(readRegularFile("/proc/self/status", { maxBytes: 8 }))).toMatchObject({ code: FILE_TOO_LARGE });
  });
});
