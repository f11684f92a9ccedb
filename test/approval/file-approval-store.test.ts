import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { DEFAULT_APPROVAL_DIR, FileApprovalStore } from "../../src/approval/file-approval-store.ts";
import { makeApprovalRequest, runApprovalStoreContract } from "../contracts/approval-store.contract.ts";
import { expectCode } from "../contracts/blob-store.contract.ts";

const root = await mkdtemp(join(tmpdir(), "isochain-approvals-"));
afterAll(() => rm(root, { recursive: true, force: true }));
let counter = 0;
const freshDir = (): string => join(root, `store-${(counter += 1)}`);

runApprovalStoreContract("FileApprovalStore", { create: () => new FileApprovalStore({ dir: freshDir() }) });

describe("FileApprovalStore", () => {
  it("defaults its directory to .isochain/approvals under the working directory", () => {
    expect(DEFAULT_APPROVAL_DIR).toBe(".isochain/approvals");
    expect(new FileApprovalStore().dir).toBe(resolve(process.cwd(), ".isochain/approvals"));
  });

  it("refuses an empty dir with ARGUMENT_INVALID", () => {
    expect(() => new FileApprovalStore({ dir: "" })).toThrowError(expect.objectContaining({ code: "ARGUMENT_INVALID" }));
  });

  it("writes one JSON file per request and its decision beside it, with no temp files left", async () => {
    const dir = freshDir();
    const store = new FileApprovalStore({ dir, now: () => 77 });
    const request = makeApprovalRequest();
    await store.putPending(request);
    expect(await readdir(dir)).toEqual(["req-1.request.json"]);
    expect(JSON.parse(await readFile(join(dir, "req-1.request.json"), "utf8"))).toEqual({ version: 1, request });
    await store.decide("req-1", "approved");
    expect((await readdir(dir)).sort()).toEqual(["req-1.decision.json", "req-1.request.json"]);
    expect(JSON.parse(await readFile(join(dir, "req-1.decision.json"), "utf8"))).toEqual({
      version: 1,
      id: "req-1",
      decision: "approved",
      decidedAt: 77,
    });
  });

  it("names files of unusual ids by hash, so no id escapes the directory", async () => {
    const dir = freshDir();
    const store = new FileApprovalStore({ dir });
    await store.putPending(makeApprovalRequest({ id: "../../escape" }));
    const names = await readdir(dir);
    expect(names).toEqual([`${FileApprovalStore.fileKey("../../escape")}.request.json`]);
    expect(FileApprovalStore.fileKey("../../escape")).toMatch(/^~[0-9a-f]{64}$/);
    expect(FileApprovalStore.fileKey("plain_id-1")).toBe("plain_id-1");
    expect(await readdir(root)).not.toContain("escape.request.json");
  });

  it("lets a new instance see pending requests and decisions (restart)", async () => {
    const dir = freshDir();
    const first = new FileApprovalStore({ dir });
    await first.putPending(makeApprovalRequest({ id: "a" }));
    await first.putPending(makeApprovalRequest({ id: "b", createdAt: 2_000 }));
    await first.decide("b", "skipped");
    const second = new FileApprovalStore({ dir });
    expect((await second.listPending()).map((r) => r.id)).toEqual(["a"]);
    expect(await second.getDecision("b")).toBe("skipped");
    await second.decide("a", "approved");
    expect(await first.getDecision("a")).toBe("approved");
    await expectCode(first.decide("a", "denied"), "APPROVAL_NOT_FOUND");
  });

  it("ignores temp files and unrelated files when listing", async () => {
    const dir = freshDir();
    const store = new FileApprovalStore({ dir });
    await store.putPending(makeApprovalRequest());
    await writeFile(join(dir, ".req-2.request.json.123.tmp"), "{");
    await writeFile(join(dir, "notes.txt"), "hello");
    expect((await store.listPending()).map((r) => r.id)).toEqual(["req-1"]);
  });

  it("throws STORE_FAILED for corrupt files", async () => {
    const dir = freshDir();
    const store = new FileApprovalStore({ dir });
    await store.putPending(makeApprovalRequest());
    await store.putPending(makeApprovalRequest({ id: "req-2" }));
    await writeFile(join(dir, "req-1.request.json"), "{ nope");
    await expectCode(store.get("req-1"), "STORE_FAILED");
    // One unreadable request does not hide the rest of the queue.
    expect((await store.listPending()).map((r) => r.id)).toEqual(["req-2"]);
    await writeFile(join(dir, "req-1.request.json"), JSON.stringify({ version: 1, request: makeApprovalRequest({ id: "other" }) }));
    await expectCode(store.get("req-1"), "STORE_FAILED");
    await writeFile(join(dir, "req-1.request.json"), JSON.stringify({ version: 2, request: makeApprovalRequest() }));
    await expectCode(store.get("req-1"), "STORE_FAILED");
    await writeFile(join(dir, "req-1.decision.json"), JSON.stringify({ version: 1, id: "req-1", decision: "maybe" }));
    await expectCode(store.getDecision("req-1"), "STORE_FAILED");
  });

  it("throws STORE_FAILED with the fs error as cause when the directory cannot be used", async () => {
    const file = join(root, `file-${(counter += 1)}`);
    await writeFile(file, "not a directory");
    const store = new FileApprovalStore({ dir: file });
    const error = await expectCode(store.putPending(makeApprovalRequest()), "STORE_FAILED");
    expect((error.cause as { code?: string }).code).toMatch(/^(ENOTDIR|EEXIST)$/);
    await expectCode(store.listPending(), "STORE_FAILED");
  });

  it("never reports a decision left without its request, and clears it when the id is queued again", async () => {
    const dir = freshDir();
    const store = new FileApprovalStore({ dir });
    await mkdir(dir, { recursive: true });
    await writeFile(join(dir, "req-1.decision.json"), JSON.stringify({ version: 1, id: "req-1", decision: "approved", decidedAt: 1 }));
    expect(await store.getDecision("req-1")).toBeUndefined();
    await store.putPending(makeApprovalRequest());
    expect(await readdir(dir)).toEqual(["req-1.request.json"]);
    expect(await store.getDecision("req-1")).toBeUndefined();
    expect((await store.listPending()).map((r) => r.id)).toEqual(["req-1"]);
  });

  it("ends a decide racing a remove with no decision and nothing pending", async () => {
    const dir = freshDir();
    const store = new FileApprovalStore({ dir });
    await store.putPending(makeApprovalRequest());
    await Promise.allSettled([store.decide("req-1", "approved"), store.remove("req-1")]);
    expect(await store.getDecision("req-1")).toBeUndefined();
    expect(await store.listPending()).toEqual([]);
    await store.putPending(makeApprovalRequest());
    expect(await store.getDecision("req-1")).toBeUndefined();
  });
});
