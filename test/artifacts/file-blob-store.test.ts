import { execFileSync } from "node:child_process";
import { constants } from "node:fs";
import { lstat, mkdtemp, open, readdir, readFile, rm, symlink, utimes, writeFile, mkdir, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { DEFAULT_BLOB_DIR, FileBlobStore, ORPHAN_GRACE_MS } from "../../src/artifacts/file-blob-store.ts";
import type { ArtifactRef } from "../../src/kernel/index.ts";
import { expectCode, refOf, runBlobStoreContract } from "../contracts/blob-store.contract.ts";

const root = await mkdtemp(join(tmpdir(), "isochain-blobs-"));
afterAll(() => rm(root, { recursive: true, force: true }));
let counter = 0;
const freshDir = (): string => join(root, `store-${(counter += 1)}`);

runBlobStoreContract("FileBlobStore", {
  create: () => new FileBlobStore({ dir: freshDir() }),
  createWithClock: (now) => new FileBlobStore({ dir: freshDir(), now }),
});

async function listTree(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true }).catch(() => []);
  return entries.filter((e) => e.isFile()).map((e) => join(e.parentPath, e.name).slice(dir.length + 1)).sort();
}

const hexOf = (ref: ArtifactRef): string => ref.slice("sha256:".length);

describe("FileBlobStore", () => {
  it("defaults its directory to .isochain/blobs under the working directory, resolved at construction", () => {
    expect(DEFAULT_BLOB_DIR).toBe(".isochain/blobs");
    expect(new FileBlobStore().dir).toBe(resolve(process.cwd(), ".isochain/blobs"));
    expect(new FileBlobStore({ dir: "rel/dir" }).dir).toBe(resolve(process.cwd(), "rel/dir"));
  });

  it("refuses an empty dir with ARGUMENT_INVALID", () => {
    expect(() => new FileBlobStore({ dir: "" })).toThrowError(expect.objectContaining({ code: "ARGUMENT_INVALID" }));
  });

  it("lays blobs out as <dir>/<2 hex>/<hex> plus a <hex>.meta.json sidecar", async () => {
    const dir = freshDir();
    const store = new FileBlobStore({ dir, now: () => 42 });
    const ref = await store.put("layout", { mimeType: "text/plain", name: "l.txt" });
    const hex = hexOf(ref);
    expect(await listTree(dir)).toEqual([join(hex.slice(0, 2), hex), join(hex.slice(0, 2), `${hex}.meta.json`)]);
    expect(await readFile(join(dir, hex.slice(0, 2), hex), "utf8")).toBe("layout");
    const sidecar = JSON.parse(await readFile(join(dir, hex.slice(0, 2), `${hex}.meta.json`), "utf8"));
    expect(sidecar).toEqual({ version: 1, ref, bytes: 6, mimeType: "text/plain", name: "l.txt", createdAt: 42, pins: 0 });
  });

  it("lets a new instance over the same directory see blobs, meta and pins (restart)", async () => {
    const dir = freshDir();
    const first = new FileBlobStore({ dir });
    const kept = await first.put("survives", { mimeType: "text/plain" });
    const loose = await first.put("collectable");
    await first.pin(kept);
    await first.pin(kept);
    const before = await first.stat(kept);

    const second = new FileBlobStore({ dir });
    expect(await second.stat(kept)).toEqual(before);
    expect(new TextDecoder().decode(await second.resolve(kept))).toBe("survives");
    await second.unpin(kept);
    expect((await new FileBlobStore({ dir }).stat(kept))?.pins).toBe(1);
    expect(await second.gc()).toEqual({ removed: 1, freedBytes: "collectable".length });
    expect(await first.stat(loose)).toBeUndefined();
    expect(await first.stat(kept)).toBeDefined();
  });

  it("keeps a put's time on the bytes, sidecar untouched (meta and pins kept), so a restarted store's gc spares the blob", async () => {
    const dir = freshDir();
    const day = 86_400_000;
    const now = Date.UTC(2030, 0, 8);
    const lastWeek = new FileBlobStore({ dir, now: () => now - 7 * day });
    const ref = await lastWeek.put("report", { mimeType: "application/json", name: "r.json" });
    await lastWeek.pin(ref);
    const { sidecar, bytes } = pathsOf(dir, ref);
    const before = await readFile(sidecar, "utf8");
    expect(await new FileBlobStore({ dir, now: () => now }).put("report", { mimeType: "text/plain" })).toBe(ref);
    // A put in another process touches only the bytes: it cannot undo a pin the owner makes meanwhile.
    expect(await readFile(sidecar, "utf8")).toBe(before);
    expect(JSON.parse(before)).toEqual({ version: 1, ref, bytes: 6, mimeType: "application/json", name: "r.json", createdAt: now - 7 * day, pins: 1 });
    expect((await stat(bytes)).mtimeMs).toBe(now);
    expect((await new FileBlobStore({ dir }).stat(ref))?.createdAt).toBe(now);
    const restarted = new FileBlobStore({ dir, now: () => now + day - 1 });
    await restarted.unpin(ref);
    expect(await restarted.gc({ olderThanMs: day })).toEqual({ removed: 0, freedBytes: 0 });
    expect(new TextDecoder().decode(await restarted.resolve(ref))).toBe("report");
    expect(await listTree(dir)).toHaveLength(2);
  });

  it("leaves no temp files behind after puts, pins and gc", async () => {
    const dir = freshDir();
    const store = new FileBlobStore({ dir });
    const data = "racing ".repeat(5000);
    await Promise.all(Array.from({ length: 50 }, () => store.put(data)));
    const refs = await Promise.all(Array.from({ length: 10 }, (_, i) => store.put(`other ${i}`)));
    await Promise.all(refs.map((ref) => store.pin(ref)));
    await store.unpin(refs[0] as ArtifactRef);
    expect((await store.gc()).removed).toBe(2);
    const files = await listTree(dir);
    expect(files.filter((name) => name.endsWith(".tmp"))).toEqual([]);
    expect(files).toHaveLength(2 * 9);
  });

  it("refuses traversal refs without touching the filesystem", async () => {
    const dir = freshDir();
    const store = new FileBlobStore({ dir });
    await mkdir(join(root, "etc"), { recursive: true });
    await writeFile(join(root, "etc", "secret"), "secret");
    const evil = `sha256:../../etc/secret` as ArtifactRef;
    await expectCode(store.resolve(evil), "ARTIFACT_REF_INVALID");
    await expectCode(store.pin(evil), "ARTIFACT_REF_INVALID");
    await expectCode(store.stat(`sha256:..%2f..%2f${"a".repeat(50)}` as ArtifactRef), "ARTIFACT_REF_INVALID");
    await expect(stat(dir)).rejects.toMatchObject({ code: "ENOENT" });
  });

  it("treats bytes without a sidecar (a crash mid-put) as absent, and a later put commits them", async () => {
    const dir = freshDir();
    const ref = refOf("half written");
    const hex = hexOf(ref);
    await mkdir(join(dir, hex.slice(0, 2)), { recursive: true });
    await writeFile(join(dir, hex.slice(0, 2), hex), "half written");
    const store = new FileBlobStore({ dir });
    expect(await store.stat(ref)).toBeUndefined();
    await expectCode(store.resolve(ref), "ARTIFACT_NOT_FOUND");
    await expectCode(store.pin(ref), "ARTIFACT_NOT_FOUND");
    expect(await store.put("half written")).toBe(ref);
    expect((await store.stat(ref))?.bytes).toBe(12);
  });

  it("rewrites the bytes when a sidecar survives but its bytes were deleted", async () => {
    const dir = freshDir();
    const store = new FileBlobStore({ dir });
    const ref = await store.put("fragile");
    await store.pin(ref);
    await rm(join(dir, hexOf(ref).slice(0, 2), hexOf(ref)));
    await expectCode(store.resolve(ref), "ARTIFACT_NOT_FOUND");
    await store.put("fragile");
    expect(new TextDecoder().decode(await store.resolve(ref))).toBe("fragile");
    expect((await store.stat(ref))?.pins).toBe(1);
  });

  it("refuses bytes changed on disk (STORE_FAILED), and a put of the original bytes repairs them, same size or not", async () => {
    const dir = freshDir();
    const store = new FileBlobStore({ dir });
    const ref = await store.put("twenty bytes exactly");
    const bytesPath = join(dir, hexOf(ref).slice(0, 2), hexOf(ref));
    await writeFile(bytesPath, "TAMPERED!");
    const error = await expectCode(store.resolve(ref), "STORE_FAILED");
    expect(error.message).toContain("no longer match");
    await writeFile(bytesPath, "twenty bytes EXACTLY");
    await expectCode(store.resolve(ref), "STORE_FAILED"); // same size, other bytes: still caught
    expect(await store.put("twenty bytes exactly")).toBe(ref); // same size, other bytes: repaired
    expect(new TextDecoder().decode(await store.resolve(ref))).toBe("twenty bytes exactly");
    await writeFile(bytesPath, "short");
    expect(await store.put("twenty bytes exactly")).toBe(ref);
    expect(new TextDecoder().decode(await store.resolve(ref))).toBe("twenty bytes exactly");
  });

  it("gc goes on past a sidecar that does not parse", async () => {
    const dir = freshDir();
    const store = new FileBlobStore({ dir });
    const broken = await store.put("broken sidecar");
    const old = await store.put("old and unpinned");
    await writeFile(join(dir, hexOf(broken).slice(0, 2), `${hexOf(broken)}.meta.json`), "{ not json");
    const result = await store.gc({ now: Date.now() + 10 * ORPHAN_GRACE_MS, olderThanMs: 0 });
    expect(result.removed).toBe(1);
    expect(await store.stat(old)).toBeUndefined();
    await expectCode(store.stat(broken), "STORE_FAILED");
  });

  it("gc removes orphan bytes and stale temp files only past the grace period, counting their bytes", async () => {
    const dir = freshDir();
    const store = new FileBlobStore({ dir });
    const kept = await store.put("committed");
    await store.pin(kept);
    const orphanHex = hexOf(refOf("orphan!"));
    const shard = join(dir, orphanHex.slice(0, 2));
    await mkdir(shard, { recursive: true });
    await writeFile(join(shard, orphanHex), "orphan!");
    await writeFile(join(shard, `.${orphanHex}.1234.tmp`), "tmp");
    const now = Date.now();

    expect(await store.gc({ now })).toEqual({ removed: 0, freedBytes: 0 });
    expect(await listTree(dir)).toHaveLength(4);

    const past = (now - ORPHAN_GRACE_MS - 1000) / 1000;
    await utimes(join(shard, orphanHex), past, past);
    await utimes(join(shard, `.${orphanHex}.1234.tmp`), past, past);
    expect(await store.gc({ now, olderThanMs: 10 * ORPHAN_GRACE_MS })).toEqual({ removed: 0, freedBytes: 0 });
    expect(await store.gc({ now })).toEqual({ removed: 0, freedBytes: "orphan!".length + 3 });
    expect(await listTree(dir)).toHaveLength(2);
    expect(await store.stat(kept)).toBeDefined();
  });

  it("throws STORE_FAILED with the fs error as cause when the directory cannot be created", async () => {
    const file = join(root, `not-a-dir-${(counter += 1)}`);
    await writeFile(file, "I am a file");
    const store = new FileBlobStore({ dir: file });
    const error = await expectCode(store.put("x"), "STORE_FAILED");
    expect((error.cause as { code?: string }).code).toMatch(/^(ENOTDIR|EEXIST)$/);
    await expectCode(store.stat(refOf("x")), "STORE_FAILED");
    await expectCode(store.gc(), "STORE_FAILED");
  });

  it("throws STORE_FAILED for a corrupt sidecar", async () => {
    const dir = freshDir();
    const store = new FileBlobStore({ dir });
    const ref = await store.put("soon corrupt");
    const sidecar = join(dir, hexOf(ref).slice(0, 2), `${hexOf(ref)}.meta.json`);
    await writeFile(sidecar, "{ not json");
    const parseError = await expectCode(store.stat(ref), "STORE_FAILED");
    expect(parseError.cause).toBeInstanceOf(SyntaxError);
    await writeFile(sidecar, JSON.stringify({ version: 1, ref: refOf("another"), bytes: 1, mimeType: "x", createdAt: 1, pins: 0 }));
    await expectCode(store.resolve(ref), "STORE_FAILED");
    await writeFile(sidecar, JSON.stringify({ version: 1, ref, bytes: 1, mimeType: "x", createdAt: 1, pins: -1 }));
    const pinError = await expectCode(store.pin(ref), "STORE_FAILED");
    expect(pinError.message).toMatch(/is corrupt; put the blob's bytes again to rewrite it\.$/);
    // put repairs it, as it repairs damaged bytes.
    expect(await store.put("soon corrupt")).toBe(ref);
    expect(new TextDecoder().decode(await store.resolve(ref))).toBe("soon corrupt");
    await store.pin(ref);
    expect((await store.stat(ref))?.pins).toBe(1);
  });

  it("refuses a blob file grown on disk without reading it: never more than the blob's size comes in", async () => {
    const dir = freshDir();
    const store = new FileBlobStore({ dir });
    const ref = await store.put("a small blob");
    const bytesPath = join(dir, hexOf(ref).slice(0, 2), hexOf(ref));
    const file = await open(bytesPath, "r+");
    await file.truncate(8 * 1024 ** 3); // sparse: 8 GiB on paper, nothing on disk
    await file.close();
    const before = process.memoryUsage().rss;
    const error = await expectCode(store.resolve(ref), "STORE_FAILED");
    expect(error.message).toContain("no longer match");
    expect(process.memoryUsage().rss - before).toBeLessThan(256 * 1024 ** 2);
    expect(await store.put("a small blob")).toBe(ref); // and put repairs it
    expect(new TextDecoder().decode(await store.resolve(ref))).toBe("a small blob");
  });

  it("gc ignores files that are not part of the layout", async () => {
    const dir = freshDir();
    await mkdir(join(dir, "zz"), { recursive: true });
    await writeFile(join(dir, "README"), "hi");
    await writeFile(join(dir, "zz", "note"), "hi");
    const store = new FileBlobStore({ dir });
    expect(await store.gc({ now: Date.now() + 10 * ORPHAN_GRACE_MS })).toEqual({ removed: 0, freedBytes: 0 });
    expect(await listTree(dir)).toEqual(["README", join("zz", "note")]);
  });
});

/**
 * Settles `promise`, or, when it has not settled within 2 s (an open stuck on a FIFO), opens and
 * closes the write end of each of `fifos` so the stuck reads end, and reports `"hung"`: a test
 * of the bug fails instead of holding a threadpool thread (and the worker) forever.
 */
async function settleWithin<T>(promise: Promise<T>, fifos: readonly string[]): Promise<PromiseSettledResult<T> | { status: "hung" }> {
  const settled = Promise.allSettled([promise]).then(([result]) => result as PromiseSettledResult<T>);
  for (let attempt = 0; attempt < 5; attempt += 1) {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const hung = new Promise<"hung">((done) => {
      timer = setTimeout(() => done("hung"), attempt === 0 ? 2_000 : 200);
    });
    const first = await Promise.race([settled, hung]);
    clearTimeout(timer);
    if (first !== "hung") return attempt === 0 ? first : { status: "hung" };
    for (const fifo of fifos) {
      const handle = await open(fifo, constants.O_WRONLY | constants.O_NONBLOCK).catch(() => undefined);
      await handle?.close();
    }
  }
  return { status: "hung" };
}

/** The rejection of a settled outcome, asserting there was one (and no hang). */
function rejection(outcome: PromiseSettledResult<unknown> | { status: "hung" }): { code?: string; message?: string } {
  expect(outcome.status).toBe("rejected");
  return (outcome as PromiseRejectedResult).reason as { code?: string; message?: string };
}

/** A blob's bytes and sidecar paths under `dir`. */
function pathsOf(dir: string, ref: ArtifactRef): { shard: string; bytes: string; sidecar: string } {
  const hex = hexOf(ref);
  const shard = join(dir, hex.slice(0, 2));
  return { shard, bytes: join(shard, hex), sidecar: join(shard, `${hex}.meta.json`) };
}

/** Data whose ref falls in shard `prefix` (two hex digits). */
function dataInShard(prefix: string, tag: string): string {
  for (let i = 0; ; i += 1) {
    const data = `${tag} ${i}`;
    if (hexOf(refOf(data)).startsWith(prefix)) return data;
  }
}

const LATER = (): number => Date.now() + 10 * ORPHAN_GRACE_MS;

describe.skipIf(process.platform === "win32")("FileBlobStore: something other than a regular file where a blob file belongs", () => {
  it("resolve throws STORE_FAILED, instead of hanging, when the bytes are a FIFO", async () => {
    const dir = freshDir();
    const store = new FileBlobStore({ dir });
    const ref = await store.put("hello");
    const { bytes } = pathsOf(dir, ref);
    await rm(bytes);
    execFileSync("mkfifo", [bytes]);
    const error = rejection(await settleWithin(store.resolve(ref), [bytes]));
    expect(error.code).toBe("STORE_FAILED");
    expect(error.message).toContain(`the bytes of ${ref} at ${bytes} are a FIFO, not a regular file`);
    expect(error.message).toContain("put the original bytes again");
  });

  it("put of the empty blob repairs bytes that became a FIFO, instead of hanging", async () => {
    const dir = freshDir();
    const store = new FileBlobStore({ dir });
    const ref = await store.put("");
    const { bytes } = pathsOf(dir, ref);
    await rm(bytes);
    execFileSync("mkfifo", [bytes]);
    expect(await settleWithin(store.put(""), [bytes])).toEqual({ status: "fulfilled", value: ref });
    expect((await lstat(bytes)).isFile()).toBe(true);
    expect((await store.resolve(ref)).byteLength).toBe(0);
  });

  it("stat and resolve throw STORE_FAILED, instead of hanging, when the sidecar is a FIFO; gc steps over it", async () => {
    const dir = freshDir();
    const store = new FileBlobStore({ dir });
    const collectable = await store.put("collectable");
    const ref = refOf("x");
    const { shard, bytes, sidecar } = pathsOf(dir, ref);
    await mkdir(shard, { recursive: true });
    await writeFile(bytes, "x");
    execFileSync("mkfifo", [sidecar]);
    const calls: (() => Promise<unknown>)[] = [() => store.stat(ref), () => store.resolve(ref)];
    for (const call of calls) {
      const error = rejection(await settleWithin(call(), [sidecar]));
      expect(error.code).toBe("STORE_FAILED");
      expect(error.message).toContain(`Blob sidecar ${sidecar} is a FIFO, not a regular file`);
    }
    const later = LATER();
    await utimes(bytes, 0, 0);
    expect(await settleWithin(store.gc({ now: later }), [sidecar])).toEqual({
      status: "fulfilled",
      value: { removed: 1, freedBytes: "collectable".length },
    });
    expect(await store.stat(collectable)).toBeUndefined();
    expect((await lstat(sidecar)).isFIFO()).toBe(true);
    expect(await readFile(bytes, "utf8")).toBe("x");
  });

  it("reads neither bytes nor sidecar through a symbolic link, even one to the right content", async () => {
    const dir = freshDir();
    const store = new FileBlobStore({ dir });
    const ref = await store.put("linked");
    const { bytes, sidecar } = pathsOf(dir, ref);
    const outside = await mkdtemp(join(root, "outside-"));
    await writeFile(join(outside, "bytes"), await readFile(bytes));
    await writeFile(join(outside, "sidecar"), await readFile(sidecar));
    await rm(bytes);
    await symlink(join(outside, "bytes"), bytes);
    const error = await expectCode(store.resolve(ref), "STORE_FAILED");
    expect(error.message).toContain("are a symbolic link, not a regular file");
    expect(await store.put("linked")).toBe(ref); // the rename replaces the link, not what it points to
    expect((await lstat(bytes)).isFile()).toBe(true);
    expect(new TextDecoder().decode(await store.resolve(ref))).toBe("linked");
    await rm(sidecar);
    await symlink(join(outside, "sidecar"), sidecar);
    expect((await expectCode(store.stat(ref), "STORE_FAILED")).message).toContain("is a symbolic link, not a regular file");
    expect(await readFile(join(outside, "sidecar"), "utf8")).toContain(ref);
  });

  it("put rewrites bytes that grew past the blob's size without reading them", async () => {
    const dir = freshDir();
    const store = new FileBlobStore({ dir });
    const ref = await store.put("small");
    await writeFile(pathsOf(dir, ref).bytes, "much larger than the blob");
    expect(await store.put("small")).toBe(ref);
    expect(new TextDecoder().decode(await store.resolve(ref))).toBe("small");
  });
});

describe("FileBlobStore: several instances on one directory in one process", () => {
  it("share the per-blob lock, so concurrent pins through both are all kept", async () => {
    const dir = freshDir();
    const a = new FileBlobStore({ dir });
    const b = new FileBlobStore({ dir: join(dir, "sub", "..") }); // another spelling, same resolved path
    const ref = await a.put("shared result");
    await Promise.all(Array.from({ length: 50 }, (_, i) => (i % 2 === 0 ? a : b).pin(ref)));
    expect((await a.stat(ref))?.pins).toBe(50);
    await Promise.all(Array.from({ length: 49 }, (_, i) => (i % 2 === 0 ? b : a).unpin(ref)));
    expect((await b.stat(ref))?.pins).toBe(1);
  });

  it("never let gc of one delete a blob another still pins", async () => {
    const dir = freshDir();
    const a = new FileBlobStore({ dir });
    const b = new FileBlobStore({ dir });
    const refs = await Promise.all(Array.from({ length: 20 }, (_, i) => a.put(`in use ${i}`)));
    await Promise.all(refs.flatMap((ref) => [a.pin(ref), b.pin(ref)]));
    await Promise.all(refs.map((ref) => a.unpin(ref))); // chain A is done; chain B still holds every ref
    expect(await a.gc()).toEqual({ removed: 0, freedBytes: 0 });
    for (const ref of refs) expect((await b.stat(ref))?.pins).toBe(1);
  });
});

describe("FileBlobStore gc: entries the store did not write", () => {
  const strays: [string, (dir: string) => Promise<unknown>][] = [
    ["a regular file named like a shard (<dir>/00)", (dir) => writeFile(join(dir, "00"), "notes")],
    ["a directory named like blob bytes (<dir>/ab/<64 hex>/)", (dir) => mkdir(join(dir, "ab", "ab".padEnd(64, "1")), { recursive: true })],
    ["a directory named like a temp file (<dir>/ab/.x.tmp/)", (dir) => mkdir(join(dir, "ab", ".x.tmp"), { recursive: true })],
    [
      "a directory named like blob bytes beside a real sidecar",
      async (dir) => {
        const hex = "ab".padEnd(64, "2");
        await mkdir(join(dir, "ab", hex), { recursive: true });
        const sidecar = { version: 1, ref: `sha256:${hex}`, bytes: 3, mimeType: "x", createdAt: 0, pins: 0 };
        await writeFile(join(dir, "ab", `${hex}.meta.json`), JSON.stringify(sidecar));
      },
    ],
  ];

  for (const [label, plant] of strays) {
    it(`steps over ${label}, collects everything else and counts nothing for it`, async () => {
      const dir = freshDir();
      const store = new FileBlobStore({ dir });
      const data = Array.from({ length: 20 }, (_, i) => `blob ${i}`);
      const refs = await Promise.all(data.map((d) => store.put(d)));
      await plant(dir);
      const before = (await readdir(dir, { recursive: true })).length;
      const freedBytes = data.reduce((sum, d) => sum + d.length, 0);
      expect(await store.gc({ now: LATER() })).toEqual({ removed: 20, freedBytes });
      for (const ref of refs) expect(await store.stat(ref)).toBeUndefined();
      expect((await readdir(dir, { recursive: true })).length).toBe(before - 2 * 20);
    });
  }

  it.skipIf(process.platform === "win32")("leaves a FIFO named like a temp file, and a link named like orphan bytes, and counts neither", async () => {
    const dir = freshDir();
    const store = new FileBlobStore({ dir });
    const ref = await store.put("kept");
    await store.pin(ref);
    const { shard } = pathsOf(dir, ref);
    const fifo = join(shard, ".stray.tmp");
    execFileSync("mkfifo", [fifo]);
    const outside = await mkdtemp(join(root, "outside-"));
    await writeFile(join(outside, "victim"), "someone else's file");
    const link = join(shard, `${hexOf(ref).slice(0, 2)}${"9".repeat(62)}`);
    await symlink(join(outside, "victim"), link);
    await utimes(join(outside, "victim"), 0, 0);
    expect(await store.gc({ now: LATER() })).toEqual({ removed: 0, freedBytes: 0 });
    expect((await lstat(fifo)).isFIFO()).toBe(true);
    expect((await lstat(link)).isSymbolicLink()).toBe(true);
    expect(await readFile(join(outside, "victim"), "utf8")).toBe("someone else's file");
  });
});

describe.skipIf(process.platform === "win32")("FileBlobStore: a shard that is not a real directory", () => {
  it("is never written or deleted through when it is a symbolic link out of the store", async () => {
    const dir = freshDir();
    const otherDir = freshDir();
    const data = dataInShard("ab", "linked shard");
    const other = new FileBlobStore({ dir: otherDir });
    const ref = await other.put(data);
    const { sidecar: outsideSidecar } = pathsOf(otherDir, ref);
    const victim = join(otherDir, "ab", `ab${"9".repeat(62)}`);
    await writeFile(victim, "someone else's file");
    await utimes(victim, 0, 0);
    await mkdir(dir, { recursive: true });
    await symlink(join(otherDir, "ab"), join(dir, "ab"));
    const outsideBefore = (await readdir(join(otherDir, "ab"))).sort();
    const sidecarBefore = await readFile(outsideSidecar, "utf8");

    const store = new FileBlobStore({ dir, now: LATER });
    const putError = await expectCode(store.put(dataInShard("ab", "another")), "STORE_FAILED");
    expect(putError.message).toContain(`${join(dir, "ab")} is a symbolic link, not a directory the store made`);
    // Bytes already there (through the link) are not re-stamped through it either.
    await expectCode(store.put(data), "STORE_FAILED");
    await expectCode(store.pin(ref), "STORE_FAILED");
    expect(await store.gc({ olderThanMs: 0, now: LATER() })).toEqual({ removed: 0, freedBytes: 0 });

    expect((await readdir(join(otherDir, "ab"))).sort()).toEqual(outsideBefore);
    expect(await readFile(outsideSidecar, "utf8")).toBe(sidecarBefore);
    expect(await readFile(victim, "utf8")).toBe("someone else's file");
    expect(new TextDecoder().decode(await other.resolve(ref))).toBe(data);
  });

  it("unpin refuses to write through a linked shard too", async () => {
    const dir = freshDir();
    const otherDir = freshDir();
    const other = new FileBlobStore({ dir: otherDir });
    const data = dataInShard("cd", "pinned elsewhere");
    const ref = await other.put(data);
    await other.pin(ref);
    await mkdir(dir, { recursive: true });
    await symlink(join(otherDir, "cd"), join(dir, "cd"));
    const store = new FileBlobStore({ dir });
    await expectCode(store.unpin(ref), "STORE_FAILED");
    expect((await other.stat(ref))?.pins).toBe(1);
  });
});
