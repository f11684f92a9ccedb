import { execFileSync } from "node:child_process";
import { randomUUID } from "node:crypto";
import { constants } from "node:fs";
import { mkdir, mkdtemp, open, readdir, readFile, rm, truncate, utimes, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { DEFAULT_APPROVAL_DIR, FileApprovalStore } from "../../src/approval/file-approval-store.ts";
import { makeApprovalRequest, runApprovalStoreContract } from "../contracts/approval-store.contract.ts";
import { expectCode } from "../contracts/blob-store.contract.ts";
import { storeRequeuedDuringFirstDecide } from "./requeue-in-another-process.ts";

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
    const file = JSON.parse(await readFile(join(dir, "req-1.request.json"), "utf8"));
    expect(file).toEqual({ version: 2, nonce: expect.stringMatching(/^[0-9a-f]{32}$/), request });
    await store.decide("req-1", "approved");
    expect((await readdir(dir)).sort()).toEqual([`req-1.${file.nonce}.decision.json`, "req-1.request.json"]);
    expect(JSON.parse(await readFile(join(dir, `req-1.${file.nonce}.decision.json`), "utf8"))).toEqual({
      version: 2,
      id: "req-1",
      nonce: file.nonce,
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
    const good = await readFile(join(dir, "req-1.request.json"), "utf8");
    const { nonce } = JSON.parse(good) as { nonce: string };
    await writeFile(join(dir, "req-1.request.json"), "{ nope");
    const notJson = await expectCode(store.get("req-1"), "STORE_FAILED");
    // What is wrong, and what repairs it.
    expect(notJson.message).toContain(`Approval request file ${join(dir, "req-1.request.json")} is corrupt: it is not JSON.`);
    expect(notJson.message).toContain("Queue the request again (putPending replaces the file");
    // One unreadable request does not hide the rest of the queue.
    expect((await store.listPending()).map((r) => r.id)).toEqual(["req-2"]);
    await writeFile(join(dir, "req-1.request.json"), JSON.stringify({ version: 2, nonce, request: makeApprovalRequest({ id: "other" }) }));
    expect((await expectCode(store.get("req-1"), "STORE_FAILED")).message).toContain('it holds the request of another id ("other")');
    await writeFile(join(dir, "req-1.request.json"), JSON.stringify({ version: 3, nonce, request: makeApprovalRequest() }));
    await expectCode(store.get("req-1"), "STORE_FAILED");
    await writeFile(join(dir, "req-1.request.json"), JSON.stringify({ version: 2, nonce: "../x", request: makeApprovalRequest() }));
    await expectCode(store.get("req-1"), "STORE_FAILED");
    await writeFile(join(dir, "req-1.request.json"), good);
    await writeFile(join(dir, `req-1.${nonce}.decision.json`), JSON.stringify({ version: 2, id: "req-1", nonce, decision: "maybe" }));
    const badDecision = await expectCode(store.getDecision("req-1"), "STORE_FAILED");
    expect(badDecision.message).toContain('is corrupt: its decision "maybe" is not "approved", "denied" or "skipped".');
    expect(badDecision.message).toContain("Remove the file, then decide again");
  });

  it("replaces a damaged request file on putPending with a new queueing that carries no decision", async () => {
    const dir = freshDir();
    const store = new FileApprovalStore({ dir });
    await store.putPending(makeApprovalRequest());
    await store.decide("req-1", "approved");
    await writeFile(join(dir, "req-1.request.json"), "{ nope");
    await store.putPending(makeApprovalRequest({ args: { amount: 2 } }));
    expect(await store.getDecision("req-1")).toBeUndefined();
    expect((await store.listPending()).map((r) => r.args)).toEqual([{ amount: 2 }]);
  });

  it("throws STORE_FAILED with the fs error as cause when the directory cannot be used", async () => {
    const file = join(root, `file-${(counter += 1)}`);
    await writeFile(file, "not a directory");
    const store = new FileApprovalStore({ dir: file });
    const error = await expectCode(store.putPending(makeApprovalRequest()), "STORE_FAILED");
    expect((error.cause as { code?: string }).code).toMatch(/^(ENOTDIR|EEXIST)$/);
    await expectCode(store.listPending(), "STORE_FAILED");
  });

  it("never reports a decision left without its request, nor lets it decide the id when queued again", async () => {
    const dir = freshDir();
    const store = new FileApprovalStore({ dir });
    await mkdir(dir, { recursive: true });
    await writeFile(join(dir, "req-1.decision.json"), JSON.stringify({ version: 1, id: "req-1", decision: "approved", decidedAt: 1 }));
    expect(await store.getDecision("req-1")).toBeUndefined();
    await store.putPending(makeApprovalRequest());
    expect(await store.getDecision("req-1")).toBeUndefined();
    expect((await store.listPending()).map((r) => r.id)).toEqual(["req-1"]);
    await store.decide("req-1", "denied");
    expect(await store.getDecision("req-1")).toBe("denied");
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

  it("does not apply a decide to the request queued again (by another process) while it ran", async () => {
    const dir = freshDir();
    // decide reads the clock after it has read the request and before it records the decision:
    // right there, another process removes the id and queues it again with other args.
    const { store, clockReads } = storeRequeuedDuringFirstDecide(dir, makeApprovalRequest({ args: { amount: 1_000_000 } }));
    await store.putPending(makeApprovalRequest({ args: { amount: 1 } }));
    // The decide counts as made before the remove: it records nothing for the new request.
    await store.decide("req-1", "approved");
    expect(clockReads()).toBe(1);
    expect((await store.get("req-1"))?.args).toEqual({ amount: 1_000_000 });
    expect(await store.getDecision("req-1")).toBeUndefined();
    expect((await store.listPending()).map((r) => r.args)).toEqual([{ amount: 1_000_000 }]);
    await store.decide("req-1", "denied");
    expect(await store.getDecision("req-1")).toBe("denied");
  });

  it("ignores a decision of an earlier queueing of the id, and lets the current one be decided", async () => {
    const dir = freshDir();
    const store = new FileApprovalStore({ dir });
    await store.putPending(makeApprovalRequest());
    const stale = "0".repeat(32);
    await writeFile(join(dir, `req-1.${stale}.decision.json`), JSON.stringify({ version: 2, id: "req-1", nonce: stale, decision: "approved", decidedAt: 1 }));
    expect(await store.getDecision("req-1")).toBeUndefined();
    expect((await store.listPending()).map((r) => r.id)).toEqual(["req-1"]);
    await store.decide("req-1", "denied");
    expect(await store.getDecision("req-1")).toBe("denied");
  });

  it("reads version-1 files (written before nonces) and keeps deciding them as version 1", async () => {
    const dir = freshDir();
    await mkdir(dir, { recursive: true });
    const decided = makeApprovalRequest({ id: "old-decided" });
    const pending = makeApprovalRequest({ id: "old-pending", createdAt: 2_000 });
    await writeFile(join(dir, "old-decided.request.json"), JSON.stringify({ version: 1, request: decided }));
    await writeFile(join(dir, "old-decided.decision.json"), JSON.stringify({ version: 1, id: "old-decided", decision: "skipped", decidedAt: 5 }));
    await writeFile(join(dir, "old-pending.request.json"), JSON.stringify({ version: 1, request: pending }));
    const store = new FileApprovalStore({ dir, now: () => 9 });
    expect(await store.get("old-decided")).toEqual(decided);
    expect(await store.getDecision("old-decided")).toBe("skipped");
    expect(await store.listPending()).toEqual([pending]);
    await store.putPending({ ...pending, createdAt: 3_000 });
    expect(JSON.parse(await readFile(join(dir, "old-pending.request.json"), "utf8"))).toEqual({ version: 1, request: { ...pending, createdAt: 3_000 } });
    await store.decide("old-pending", "approved");
    expect(await store.getDecision("old-pending")).toBe("approved");
    expect(JSON.parse(await readFile(join(dir, "old-pending.decision.json"), "utf8"))).toEqual({
      version: 1,
      id: "old-pending",
      decision: "approved",
      decidedAt: 9,
    });
    await store.remove("old-decided");
    expect((await readdir(dir)).sort()).toEqual(["old-pending.decision.json", "old-pending.request.json"]);
  });

  describe.skipIf(process.platform === "win32")("a FIFO where a store file belongs", () => {
    it("is left out of listPending, which lists the rest of the queue", async () => {
      const dir = freshDir();
      const store = new FileApprovalStore({ dir });
      await store.putPending(makeApprovalRequest({ id: "ok1" }));
      const fifo = join(dir, "garbage.request.json");
      execFileSync("mkfifo", [fifo]);
      const listed = await settleWithin(store.listPending(), [fifo]);
      expect(listed).toEqual({ status: "fulfilled", value: [makeApprovalRequest({ id: "ok1" })] });
    });

    it("makes get, getDecision and decide throw STORE_FAILED instead of hanging", async () => {
      const dir = freshDir();
      const store = new FileApprovalStore({ dir });
      await mkdir(dir, { recursive: true });
      const fifo = join(dir, "x.request.json");
      execFileSync("mkfifo", [fifo]);
      const calls: (() => Promise<unknown>)[] = [() => store.get("x"), () => store.getDecision("x"), () => store.decide("x", "approved")];
      for (const call of calls) {
        const outcome = await settleWithin(call(), [fifo]);
        expect(outcome.status).toBe("rejected");
        const error = (outcome as PromiseRejectedResult).reason as { code?: string; message?: string };
        expect(error.code).toBe("STORE_FAILED");
        expect(error.message).toContain(`${fifo} is a FIFO, not a regular file`);
      }
      // remove clears it, and the id can be queued again.
      await store.remove("x");
      // A file far past any request this store writes (sparse: no disk used) is refused unread.
      const huge = join(dir, "big.request.json");
      await writeFile(huge, "");
      await truncate(huge, 200 * 1024 * 1024);
      const before = process.memoryUsage().rss;
      await expect(store.get("big")).rejects.toThrow(`Approval file ${huge} is ${200 * 1024 * 1024} bytes, over the ${64 * 1024 * 1024} an approval file is read up to`);
      expect(process.memoryUsage().rss - before).toBeLessThan(100 * 1024 * 1024);
      await store.remove("big");
      await store.putPending(makeApprovalRequest({ id: "x" }));
      expect(await store.get("x")).toEqual(makeApprovalRequest({ id: "x" }));
    });
  });

  describe("sweeping stale files on listPending", () => {
    const longAgo = new Date(Date.now() - 60 * 60 * 1000);
    const tempName = (target: string): string => `.${target}.${randomUUID()}.tmp`;

    it("deletes temp files older than the grace period and keeps fresh ones and foreign files", async () => {
      const dir = freshDir();
      const store = new FileApprovalStore({ dir });
      await store.putPending(makeApprovalRequest());
      const oldTemps = [tempName("req-1.request.json"), tempName(`req-1.${"a".repeat(32)}.decision.json`)];
      const freshTemp = tempName("req-2.request.json");
      const foreign = [".notes.tmp", "notes.txt", `.x.${randomUUID()}.tmp.bak`];
      for (const name of [...oldTemps, ...foreign]) {
        await writeFile(join(dir, name), "{");
        await utimes(join(dir, name), longAgo, longAgo);
      }
      await writeFile(join(dir, freshTemp), "{");
      expect((await store.listPending()).map((r) => r.id)).toEqual(["req-1"]);
      expect((await readdir(dir)).sort()).toEqual([freshTemp, ...foreign, "req-1.request.json"].sort());
    });

    it("deletes old decisions of gone queueings and keeps the current decision", async () => {
      const dir = freshDir();
      const store = new FileApprovalStore({ dir });
      await store.putPending(makeApprovalRequest({ id: "decided" }));
      await store.decide("decided", "approved");
      await store.putPending(makeApprovalRequest({ id: "queued" }));
      const stale = "0".repeat(32);
      const orphans = [
        `queued.${stale}.decision.json`, // an earlier queueing of a request that is there
        `gone.${stale}.decision.json`, // a request that is no more
        "gone-v1.decision.json",
      ];
      const freshOrphan = `fresh.${stale}.decision.json`;
      for (const name of [...orphans, freshOrphan]) await writeFile(join(dir, name), "{}");
      for (const name of orphans) await utimes(join(dir, name), longAgo, longAgo);
      const [current] = (await readdir(dir)).filter((name) => name.startsWith("decided.") && name.endsWith(".decision.json"));
      await utimes(join(dir, current ?? "missing"), longAgo, longAgo);
      expect((await store.listPending()).map((r) => r.id)).toEqual(["queued"]);
      expect((await readdir(dir)).sort()).toEqual([current, "decided.request.json", freshOrphan, "queued.request.json"].sort());
      expect(await store.getDecision("decided")).toBe("approved");
    });
  });
});

/**
 * Settles `promise`, or, when it has not settled within 2 s (a read stuck on a FIFO), opens and
 * closes the write end of each of `fifos` so the stuck reads end, and reports `"hung"`.
 */
async function settleWithin<T>(promise: Promise<T>, fifos: readonly string[]): Promise<PromiseSettledResult<T> | { status: "hung" }> {
  const settled = Promise.allSettled([promise]).then(([result]) => result as PromiseSettledResult<T>);
  let timer: ReturnType<typeof setTimeout> | undefined;
  const hung = new Promise<"hung">((resolve) => {
    timer = setTimeout(() => resolve("hung"), 2_000);
  });
  const first = await Promise.race([settled, hung]);
  clearTimeout(timer);
  if (first !== "hung") return first;
  for (const fifo of fifos) {
    const handle = await open(fifo, constants.O_WRONLY | constants.O_NONBLOCK).catch(() => undefined);
    await handle?.close();
  }
  await settled;
  return { status: "hung" };
}
