import { existsSync, mkdtempSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { mkdir } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { FileApprovalStore, FileBlobStore, FileTraceStore } from "../../src/index.ts";
import { makeDirectory } from "../../src/kernel/make-directory.ts";
import { makeApprovalRequest } from "../contracts/approval-store.contract.ts";
import { chainStartEvent } from "../trace/fixtures/sample-events.ts";

const root = mkdtempSync(join(tmpdir(), "isochain-mkdir-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe("makeDirectory", () => {
  it("creates a folder and the missing folders above it, and takes one that exists", async () => {
    const deep = join(root, "a", "b", "c");
    await makeDirectory(deep);
    expect(statSync(deep).isDirectory()).toBe(true);
    await makeDirectory(deep);
    await makeDirectory(join(root, "a"));
    expect(statSync(deep).isDirectory()).toBe(true);
  });

  it("takes a link to a folder, as mkdir -p does", async () => {
    const target = join(root, "target");
    await makeDirectory(target);
    const link = join(root, "link");
    symlinkSync(target, link);
    await makeDirectory(link);
    await makeDirectory(join(link, "inside"));
    expect(statSync(join(target, "inside")).isDirectory()).toBe(true);
  });

  it("fails as a recursive mkdir does where a file is in the way", async () => {
    const file = join(root, "file.txt");
    writeFileSync(file, "x");
    await expect(makeDirectory(file)).rejects.toMatchObject({ code: "EEXIST" });
    await expect(makeDirectory(join(file, "below"))).rejects.toMatchObject({ code: "ENOTDIR" });
    await expect(mkdir(join(file, "below"), { recursive: true })).rejects.toMatchObject({ code: "ENOTDIR" });
  });

  it("lets concurrent calls create the same folders", async () => {
    const shared = join(root, "x", "y", "z");
    await Promise.all(Array.from({ length: 8 }, () => makeDirectory(shared)));
    expect(statSync(shared).isDirectory()).toBe(true);
  });

  // Node's recursive mkdir never settles there: /proc refuses a new folder with ENOENT although
  // /proc exists, and Node creates the parent and tries again, for good.
  it.runIf(process.platform === "linux" && existsSync("/proc/self"))("ends with ENOENT where a folder cannot be created although its parent exists (/proc)", async () => {
    await expect(makeDirectory("/proc/isochain-store/traces")).rejects.toMatchObject({ code: "ENOENT" });
    await expect(makeDirectory("/proc/isochain-store")).rejects.toMatchObject({ code: "ENOENT" });
  });

  it.runIf(process.platform === "linux" && existsSync("/proc/self"))("lets every file store told to live under /proc fail its first write instead of waiting for good", async () => {
    const traces = new FileTraceStore({ dir: "/proc/isochain-store/traces" });
    await expect(traces.append("c1", chainStartEvent("c1"))).rejects.toMatchObject({ code: "STORE_FAILED" });
    await traces.close();
    const blobs = new FileBlobStore({ dir: "/proc/isochain-store/blobs" });
    await expect(blobs.put("bytes")).rejects.toMatchObject({ code: "STORE_FAILED" });
    const approvals = new FileApprovalStore({ dir: "/proc/isochain-store/approvals" });
    await expect(approvals.putPending(makeApprovalRequest())).rejects.toMatchObject({ code: "STORE_FAILED" });
  });
});
