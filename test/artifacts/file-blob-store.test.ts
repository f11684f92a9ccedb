import { mkdtemp, readdir, readFile, rm, utimes, writeFile, mkdir, stat } from "node:fs/promises";
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

runBlobStoreContract("FileBlobStore", { create: () => new FileBlobStore({ dir: freshDir() }) });

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
    await expectCode(store.pin(ref), "STORE_FAILED");
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
