import { execFileSync, spawn, spawnSync } from "node:child_process";
import { readdirSync, readlinkSync } from "node:fs";
import { mkdir, mkdtemp, readdir, readFile, rm, symlink, truncate, writeFile } from "node:fs/promises";
import { hostname, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it, vi } from "vitest";
import { isChainRuntimeError } from "../../src/kernel/index.ts";
import { FileTraceStore } from "../../src/trace/file-trace-store.ts";
import { UNREADABLE_RESUME_CLAIM } from "../../src/trace/trace-store.ts";
import { loadTraceFile, MAX_TRACE_FILE_BYTES } from "../../src/trace/load-trace-file.ts";
import { decodeTraceFrames, encodeTraceFrame } from "../../src/trace/trace-frame-codec.ts";
import { expectCode, runTraceStoreContract } from "../contracts/trace-store.contract.ts";
import { exportTraceJson } from "../../src/trace/export-trace-json.ts";
import { foldTraceEvents } from "../../src/trace/fold-trace-events.ts";
import {
  chainEndEvent,
  chainStartEvent,
  LONE_SURROGATE_LONG_TEXT,
  LONE_SURROGATE_TEXT,
  loneSurrogateEvents,
  toolCallEvent,
  toolResultEvent,
} from "./fixtures/sample-events.ts";

const roots: string[] = [];
/** The pid of a process that has ended. */
function deadPid(): number {
  const child = spawnSync(process.execPath, ["-e", ""]);
  return child.pid as number;
}

/** Trace files of `dir` this process holds open now (Linux: its descriptors in /proc/self/fd). */
function openTraceFiles(dir: string): number {
  let count = 0;
  for (const fd of readdirSync("/proc/self/fd")) {
    try {
      const target = readlinkSync(`/proc/self/fd/${fd}`);
      if (target.startsWith(`${dir}/`) && target.endsWith(".trace")) count++;
    } catch {
      // closed since it was listed
    }
  }
  return count;
}

async function freshDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "isochain-trace-"));
  roots.push(dir);
  return join(dir, "traces");
}
afterAll(async () => {
  await Promise.all(roots.map((dir) => rm(dir, { recursive: true, force: true })));
});

runTraceStoreContract("FileTraceStore", { create: async () => new FileTraceStore({ dir: await freshDir() }) });
runTraceStoreContract("FileTraceStore (fsync off)", {
  create: async () => new FileTraceStore({ dir: await freshDir(), fsync: false }),
});

describe("FileTraceStore", () => {
  it("defaults to .isochain/traces and is durable", () => {
    const store = new FileTraceStore();
    expect(store.dir).toBe(resolve(".isochain/traces")); // resolved now: a later chdir does not move it
    expect(store.durable).toBe(true);
  });

  it("refuses a dir that is not a non-empty string with ARGUMENT_INVALID", () => {
    for (const dir of [5, "", {}]) {
      expect(() => new FileTraceStore({ dir: dir as never })).toThrow(/dir must be a non-empty string/);
    }
  });

  it("writes one <chainId>.trace file per chain, creating the folder", async () => {
    const dir = await freshDir();
    const store = new FileTraceStore({ dir });
    await store.append("one", chainStartEvent("one"));
    await store.append("two", chainStartEvent("two"));
    // Each with the lease of its live writer, until the chain ends.
    expect((await readdir(dir)).sort()).toEqual(["one.live", "one.trace", "two.live", "two.trace"]);
    expect(store.pathOf("one")).toBe(join(dir, "one.trace"));
    await store.append("one", chainEndEvent());
    await store.load("one");
    expect((await readdir(dir)).sort()).toEqual(["one.trace", "two.live", "two.trace"]);
    await store.close();
    expect((await readdir(dir)).sort()).toEqual(["one.trace", "two.trace"]);
  });

  it("has each event's frame in the file when append resolves", async () => {
    const dir = await freshDir();
    const store = new FileTraceStore({ dir });
    await store.append("disk", chainStartEvent("disk"));
    await store.append("disk", toolCallEvent(0));
    let bytes = await readFile(join(dir, "disk.trace"));
    expect(decodeTraceFrames(bytes).events.map((event) => event.type)).toEqual(["chain-start", "tool-call"]);
    expect(bytes.equals(Buffer.concat([encodeTraceFrame(chainStartEvent("disk")), encodeTraceFrame(toolCallEvent(0))]))).toBe(true);
    await store.append("disk", toolResultEvent(0));
    bytes = await readFile(join(dir, "disk.trace"));
    expect(decodeTraceFrames(bytes).events.map((event) => event.type)).toEqual(["chain-start", "tool-call", "tool-result"]);
    await store.close();
  });

  it("gives back strings holding lone surrogates as they were, to every reader of the file", async () => {
    const dir = await freshDir();
    const store = new FileTraceStore({ dir, fsync: false });
    const events = loneSurrogateEvents("lone");
    for (const event of events) await store.append("lone", event);
    await store.close();
    const expected = foldTraceEvents(events);
    const trace = await new FileTraceStore({ dir }).load("lone");
    expect(trace).toEqual(expected);
    expect(await loadTraceFile(join(dir, "lone.trace"))).toEqual(expected);
    const structured = trace.calls[0]?.result?.structured as { short: string; long: string };
    expect([...structured.short].map((char) => char.charCodeAt(0))).toEqual([97, 0xd800, 98]);
    expect(structured.long).toBe(LONE_SURROGATE_LONG_TEXT);
    expect(trace.approvalRequests[0]?.args).toEqual({ to: "ceo\uDFFF@example.com", body: LONE_SURROGATE_LONG_TEXT });
    expect(trace.outcome?.returnValue).toEqual({ text: LONE_SURROGATE_TEXT });
    // The JSON export writes each lone surrogate as a \u escape, which parses back to it.
    const exported = exportTraceJson(trace);
    expect(exported).toContain('"short": "a\\ud800b"');
    expect(JSON.parse(exported)).toEqual(expected);
    // Listing reads the first record alone (an escaped frame here: the source holds one).
    expect(await new FileTraceStore({ dir }).list({ limit: 1 })).toEqual([{ chainId: "lone", createdAt: trace.createdAt, calls: 1, status: "ok" }]);
  });

  it("ignores a torn final record and keeps everything before it", async () => {
    const dir = await freshDir();
    const store = new FileTraceStore({ dir });
    const events = [chainStartEvent("torn"), toolCallEvent(0), toolResultEvent(0), toolCallEvent(1), toolResultEvent(1)];
    for (const event of events) await store.append("torn", event);
    await store.close();
    const path = join(dir, "torn.trace");
    const whole = await readFile(path);
    const lastFrame = encodeTraceFrame(toolResultEvent(1)).length;
    expect((await store.load("torn")).calls[1]?.state).toBe("completed");
    // cut inside the payload, right after the length prefix, and inside the length prefix
    for (const keep of [lastFrame - 1, lastFrame - 7, 4, 3, 1]) {
      await writeFile(path, whole.subarray(0, whole.length - lastFrame + keep));
      const trace = await new FileTraceStore({ dir }).load("torn");
      expect(trace.calls.map((call) => [call.callId, call.state])).toEqual([
        ["c0", "completed"],
        ["c1", "in-doubt"],
      ]);
    }
  });

  it("says a file that is not a trace at all is not one, and a torn first record is a torn trace", async () => {
    const dir = await freshDir();
    await mkdir(dir, { recursive: true });
    const text = join(dir, "notes.trace");
    await writeFile(text, "root:x:0:0:root:/root:/bin/bash\n");
    await expect(loadTraceFile(text)).rejects.toThrow(/is not a record cut short by a crash: the log is damaged there \(or is not a trace\)/);
    // A crash while the first record was written: what is there is still a record's start.
    const start = encodeTraceFrame(chainStartEvent("cut"));
    const cut = join(dir, "cut.trace");
    await writeFile(cut, start.subarray(0, start.length - 3));
    await expect(loadTraceFile(cut)).rejects.toThrow(
      `${cut}: The trace log holds no whole record: its first (the chain's start) is cut short at byte ${start.length - 3} (a crash while the chain was starting?).`,
    );
    const zeros = join(dir, "zeros.trace");
    await writeFile(zeros, Buffer.alloc(4096));
    await expect(loadTraceFile(zeros)).rejects.toThrow(`${zeros}: The trace log holds no record: its 4096 bytes are all zeros`);
  });

  it("reports a corrupt frame in the middle of a file as TRACE_INVALID", async () => {
    const dir = await freshDir();
    await mkdir(dir, { recursive: true });
    const start = encodeTraceFrame(chainStartEvent("bad"));
    const junk = Buffer.from([0, 0, 0, 2, 0x92, 0x01]); // an array announcing two items, holding one
    await writeFile(join(dir, "bad.trace"), Buffer.concat([start, junk, encodeTraceFrame(toolCallEvent(0))]));
    await expectCode(new FileTraceStore({ dir }).load("bad"), "TRACE_INVALID");
  });

  it("refuses a log whose length prefix is damaged mid-file: later records are not a torn tail to drop", async () => {
    const dir = await freshDir();
    await mkdir(dir, { recursive: true });
    const path = join(dir, "damaged.trace");
    const frames = [chainStartEvent("damaged"), toolCallEvent(0), toolResultEvent(0), toolCallEvent(1), toolResultEvent(1)].map(encodeTraceFrame);
    const bytes = Buffer.concat(frames);
    // The high byte of the third record's length: it now claims ~16 MiB, far past the end.
    const third = (frames[0] as Buffer).length + (frames[1] as Buffer).length;
    bytes[third] = 0x01;
    await writeFile(path, bytes);
    await expect(loadTraceFile(path)).rejects.toThrow(/Trace frame 2 at byte \d+ claims \d+ bytes, past the end of the log/);
    const store = new FileTraceStore({ dir });
    await expectCode(store.load("damaged"), "TRACE_INVALID");
    // The writer must not cut the records after the damage off either.
    await expectCode(store.append("damaged", toolCallEvent(2)), "STORE_FAILED");
    expect((await readFile(path)).equals(bytes)).toBe(true);
    await store.close();
  });

  it("reads a 64-bit integer in a hand-made log as a number, never a BigInt", async () => {
    const dir = await freshDir();
    await mkdir(dir, { recursive: true });
    const path = join(dir, "wide.trace");
    const end = { ...chainEndEvent(), status: "ok", returnValue: { big: 2n ** 60n } } as unknown as Parameters<typeof encodeTraceFrame>[0];
    await writeFile(path, Buffer.concat([encodeTraceFrame(chainStartEvent("wide")), encodeTraceFrame(end)]));
    const trace = await loadTraceFile(path);
    expect(trace.outcome?.returnValue).toEqual({ big: 2 ** 60 });
    expect(() => JSON.stringify(trace)).not.toThrow();
  });

  it("reads a log followed by zero bytes (a power loss's zero-filled tail) as a torn tail", async () => {
    const dir = await freshDir();
    await mkdir(dir, { recursive: true });
    const path = join(dir, "zeros.trace");
    const log = Buffer.concat([chainStartEvent("zeros"), toolCallEvent(0), toolResultEvent(0)].map(encodeTraceFrame));
    await writeFile(path, Buffer.concat([log, Buffer.alloc(4096)]));
    expect((await loadTraceFile(path)).calls.map((call) => call.state)).toEqual(["completed"]);
    expect(decodeTraceFrames(await readFile(path))).toMatchObject({ validBytes: log.length, tornBytes: 4096 });
  });

  it("cuts a torn tail off before appending to the file again", async () => {
    const dir = await freshDir();
    await mkdir(dir, { recursive: true });
    const path = join(dir, "resume.trace");
    const call = encodeTraceFrame(toolCallEvent(0));
    await writeFile(path, Buffer.concat([encodeTraceFrame(chainStartEvent("resume")), call.subarray(0, call.length - 2)]));
    const store = new FileTraceStore({ dir });
    await store.append("resume", toolCallEvent(0));
    await store.append("resume", toolResultEvent(0));
    const { events, tornBytes } = decodeTraceFrames(await readFile(path));
    expect(tornBytes).toBe(0);
    expect(events.map((event) => event.type)).toEqual(["chain-start", "tool-call", "tool-result"]);
    expect((await store.load("resume")).calls[0]?.state).toBe("completed");
    await store.close();
  });

  it("refuses to append to a file corrupt in the middle (STORE_FAILED with cause)", async () => {
    const dir = await freshDir();
    await mkdir(dir, { recursive: true });
    await writeFile(
      join(dir, "rotten.trace"),
      Buffer.concat([encodeTraceFrame(chainStartEvent("rotten")), Buffer.from([0, 0, 0, 2, 0x92, 0x01]), encodeTraceFrame(toolCallEvent(0))]),
    );
    const store = new FileTraceStore({ dir });
    const error: unknown = await store.append("rotten", toolCallEvent(1)).catch((thrown: unknown) => thrown);
    expect(isChainRuntimeError(error) && error.code).toBe("STORE_FAILED");
    expect(isChainRuntimeError((error as Error).cause) && ((error as Error).cause as { code: string }).code).toBe("TRACE_INVALID");
    await store.close();
  });

  it("turns an I/O failure into STORE_FAILED with the cause, and refuses that chain from then on", async () => {
    const dir = await freshDir();
    await mkdir(join(dir, "blocked.trace"), { recursive: true }); // a folder where the file should be
    const store = new FileTraceStore({ dir });
    const first: unknown = await store.append("blocked", toolCallEvent(0)).catch((thrown: unknown) => thrown);
    expect(isChainRuntimeError(first) && first.code).toBe("STORE_FAILED");
    expect(((first as Error).cause as NodeJS.ErrnoException).code).toBe("EISDIR");
    // A chain-start creates its file exclusively: something already at the path is a taken id.
    await expectCode(new FileTraceStore({ dir }).append("blocked", chainStartEvent("blocked")), "TRACE_INVALID");
    await rm(join(dir, "blocked.trace"), { recursive: true });
    await expectCode(store.append("blocked", toolCallEvent(0)), "STORE_FAILED");
    // other chains are unaffected
    await store.append("fine", chainStartEvent("fine"));
    expect((await store.load("fine")).chainId).toBe("fine");
    await store.close();
  });

  it("recreates a folder removed while the store was open", async () => {
    const dir = await freshDir();
    const store = new FileTraceStore({ dir });
    await store.append("first", chainStartEvent("first"));
    await rm(dir, { recursive: true });
    await store.append("second", chainStartEvent("second"));
    expect((await store.load("second")).chainId).toBe("second");
    await store.close();
  });

  it("prunes a chain another process left unfinished once that process is gone, and deletes its files", async () => {
    const dir = await freshDir();
    const crashed = new FileTraceStore({ dir });
    await crashed.append("orphan", chainStartEvent("orphan", { createdAt: 5 }));
    await crashed.append("orphan", toolCallEvent(0));
    // Another store object (or process) sees the chain's live writer and leaves it alone.
    const store = new FileTraceStore({ dir });
    expect(await store.liveWriter("orphan")).toBe("this process");
    expect(await store.prune({ olderThanMs: 1000 })).toBe(0);
    // The writer's process dies (kill -9): its lease now names a process that is gone.
    await writeFile(join(dir, "orphan.live"), JSON.stringify({ pid: deadPid(), host: hostname() }));
    expect(await store.liveWriter("orphan")).toBeUndefined();
    expect(await store.prune({ olderThanMs: 1000 })).toBe(1);
    expect(await readdir(dir)).toEqual([]);
    await store.close();
  });

  it("leaves the lease of a chain's writer alone when another run is refused that chain id", async () => {
    const dir = await freshDir();
    const writer = new FileTraceStore({ dir, fsync: false });
    await writer.append("taken", chainStartEvent("taken"));
    await writer.append("taken", toolCallEvent(0));
    const lease = await readFile(join(dir, "taken.live"), "utf8");
    const intruder = new FileTraceStore({ dir, fsync: false });
    await expectCode(intruder.append("taken", chainStartEvent("taken")), "TRACE_INVALID");
    await intruder.close();
    expect(await readFile(join(dir, "taken.live"), "utf8")).toBe(lease);
    const observer = new FileTraceStore({ dir });
    expect(await observer.liveWriter("taken")).toBe("this process");
    await writer.close();
    expect(await observer.liveWriter("taken")).toBeUndefined();
  });

  it("closes the file and gives up the lease when a chain-end cannot be encoded: the chain is over all the same", async () => {
    const dir = await freshDir();
    const store = new FileTraceStore({ dir, fsync: false });
    const openFiles = async (): Promise<number> => (await readdir("/proc/self/fd")).length;
    await store.append("unending", chainStartEvent("unending"));
    await store.append("unending", toolCallEvent(0));
    await store.append("unending", toolResultEvent(0));
    const whileWriting = await openFiles();
    expect(await store.liveWriter("unending")).toBe("this process");
    let deep: unknown = 1;
    for (let i = 0; i < 50_000; i++) deep = [deep]; // past what msgpack can nest
    await expectCode(store.append("unending", chainEndEvent({ returnValue: deep })), "STORE_FAILED");
    // The writer retires in the background, as after a chain-end.
    await vi.waitFor(async () => expect(await store.liveWriter("unending")).toBeUndefined(), { timeout: 5_000 });
    expect(await readdir(dir)).toEqual(["unending.trace"]);
    expect(await openFiles()).toBeLessThan(whileWriting);
    const trace = await store.load("unending");
    expect(trace.calls.map((call) => call.state)).toEqual(["completed"]);
    expect(trace.outcome).toBeUndefined();
    await store.close();
  });

  it("names the live writer of a chain from its lease: this process, another live one, another host, or none", async () => {
    const dir = await freshDir();
    const store = new FileTraceStore({ dir });
    await mkdir(dir, { recursive: true });
    expect(await store.liveWriter("nobody")).toBeUndefined();
    await writeFile(join(dir, "parent.live"), JSON.stringify({ pid: process.ppid, host: hostname() }));
    expect(await store.liveWriter("parent")).toBe(`process ${process.ppid}`);
    // A pid reused by a later process is not the writer: the lease's start time tells them apart.
    await writeFile(join(dir, "reused.live"), JSON.stringify({ pid: process.ppid, host: hostname(), started: 1 }));
    expect(await store.liveWriter("reused")).toBe(process.platform === "linux" ? undefined : `process ${process.ppid}`);
    await writeFile(join(dir, "far.live"), JSON.stringify({ pid: 7, host: "elsewhere" }));
    expect(await store.liveWriter("far")).toBe("process 7 on elsewhere"); // cannot be checked: counts as live
    await writeFile(join(dir, "garbled.live"), "{");
    expect(await store.liveWriter("garbled")).toMatch(/^an unknown writer \(its lease .* does not parse\)$/);
    await store.close();
  });

  it("refuses an append that would take the file past maxFileBytes, so every file it writes loads", async () => {
    const dir = await freshDir();
    const store = new FileTraceStore({ dir, maxFileBytes: 4096 });
    await store.append("big", chainStartEvent("big"));
    await store.append("big", toolCallEvent(0));
    const huge = toolResultEvent(0, { result: { status: "ok", text: "x".repeat(5000) } });
    const error = await store.append("big", huge).catch((thrown: unknown) => thrown);
    expect(isChainRuntimeError(error) && error.code).toBe("STORE_FAILED");
    expect(String((error as Error).message)).toMatch(/would grow past 4096 bytes \(the store's maxFileBytes\): large tool results belong in a blob store/);
    await expectCode(store.append("big", toolResultEvent(0)), "STORE_FAILED"); // the writer is broken from then on
    expect((await store.load("big")).calls.map((call) => call.state)).toEqual(["in-doubt"]);
    // A broken writer writes nothing more: the chain is not reported as still running.
    expect(await store.liveWriter("big")).toBeUndefined();
    expect(await readdir(dir)).not.toContain("big.live");
    expect(() => new FileTraceStore({ dir, maxFileBytes: MAX_TRACE_FILE_BYTES + 1 })).toThrow(/maxFileBytes must be an integer from 1 to/);
    await store.close();
  });

  it("holds at most maxOpenFiles trace files open, whatever the number of chains, and loses nothing", async () => {
    const dir = await freshDir();
    const store = new FileTraceStore({ dir, fsync: false, maxOpenFiles: 3 });
    const ids = Array.from({ length: 20 }, (_, index) => `burst-${index}`);
    let most = 0;
    const watch = setInterval(() => (most = Math.max(most, openTraceFiles(dir))), 1);
    try {
      // Every chain's log begun at once (as chains queued for a sandbox do), then an event each.
      await Promise.all(ids.map((id) => store.append(id, chainStartEvent(id))));
      expect(store.openFiles).toBeLessThanOrEqual(3);
      expect(openTraceFiles(dir)).toBeLessThanOrEqual(3);
      await Promise.all(ids.map((id) => store.append(id, toolCallEvent(0))));
      await Promise.all(ids.map((id) => store.append(id, toolResultEvent(0))));
      // Their own files, reopened: a chain's writer picks up where it left off, across many reopenings.
      for (let round = 1; round < 4; round++) {
        for (const id of ids) await store.append(id, toolCallEvent(round));
      }
      await Promise.all(ids.map((id) => store.append(id, chainEndEvent())));
    } finally {
      clearInterval(watch);
    }
    expect(most).toBeLessThanOrEqual(3);
    for (const id of ids) {
      const trace = await store.load(id);
      expect(trace.calls.map((call) => call.state), id).toEqual(["completed", "in-doubt", "in-doubt", "in-doubt"]);
      expect(trace.outcome?.status).toBe("ok");
    }
    expect(store.openFiles).toBe(0); // every chain ended: no file held
    expect(() => new FileTraceStore({ dir, maxOpenFiles: 0 })).toThrow(/maxOpenFiles must be an integer of at least 1/);
    await store.close();
  });

  it("refuses to go on with a log removed while its file was let go, instead of starting it again without its start", async () => {
    const dir = await freshDir();
    const store = new FileTraceStore({ dir, fsync: false, maxOpenFiles: 1 });
    await store.append("first", chainStartEvent("first"));
    await store.append("second", chainStartEvent("second")); // the first's file is let go for it
    expect(openTraceFiles(dir)).toBe(1);
    await rm(join(dir, "first.trace"));
    await expectCode(store.append("first", toolCallEvent(0)), "STORE_FAILED");
    expect(await readdir(dir)).not.toContain("first.trace");
    await store.append("second", toolCallEvent(0)); // the other chain goes on
    expect((await store.load("second")).calls).toHaveLength(1);
    await store.close();
  });

  it("leaves no empty log behind when a chain's start fails after its file was created (its lease refused)", async () => {
    const dir = await freshDir();
    await mkdir(join(dir, `leaseless.live.${process.pid}.tmp`), { recursive: true }); // the lease cannot be written
    const store = new FileTraceStore({ dir, fsync: false });
    await expectCode(store.append("leaseless", chainStartEvent("leaseless")), "STORE_FAILED");
    expect(await readdir(dir)).not.toContain("leaseless.trace");
    expect(await store.chainIds()).toEqual([]);
    await store.close();
    await rm(join(dir, `leaseless.live.${process.pid}.tmp`), { recursive: true });
    const again = new FileTraceStore({ dir, fsync: false }); // the chain id is free again
    await again.append("leaseless", chainStartEvent("leaseless"));
    expect((await again.load("leaseless")).chainId).toBe("leaseless");
    await again.close();
  });

  it("never writes through a symbolic link planted at a trace's path, and fails on a FIFO instead of hanging", async () => {
    const dir = await freshDir();
    await mkdir(dir, { recursive: true });
    const victim = join(dir, "..", "victim.txt");
    await writeFile(victim, "precious\n");
    await writeFile(join(dir, "linked.trace"), Buffer.concat([chainStartEvent("linked"), toolCallEvent(0)].map(encodeTraceFrame)));
    await rm(join(dir, "linked.trace"));
    await symlink(victim, join(dir, "linked.trace"));
    const store = new FileTraceStore({ dir, fsync: false });
    await expectCode(store.append("linked", toolResultEvent(0)), "STORE_FAILED");
    expect(await readFile(victim, "utf8")).toBe("precious\n");
    execFileSync("mkfifo", [join(dir, "piped.trace"), join(dir, "claimed.resumed"), join(dir, "waiting.live")]);
    await expectCode(store.append("piped", toolCallEvent(0)), "STORE_FAILED");
    await expectCode(store.claimResume("claimed", "other"), "STORE_FAILED");
    expect(await store.liveWriter("waiting")).toMatch(/^an unknown writer \(its lease .* cannot be read: .*not a regular file\)$/);
    // A writer that could not open its log took no lease.
    expect((await readdir(dir)).filter((name) => name.endsWith(".live"))).toEqual(["waiting.live"]);
    await store.close();
  });

  it("refuses to load a trace file under another chain's id (a copy or rename): prune could delete the wrong one", async () => {
    const dir = await freshDir();
    const store = new FileTraceStore({ dir });
    await store.append("seed", chainStartEvent("seed"));
    await store.append("seed", chainEndEvent());
    await writeFile(join(dir, "seed-backup.trace"), await readFile(join(dir, "seed.trace")));
    await expect(store.load("seed-backup")).rejects.toThrow(/holds the trace of chain seed, not of seed-backup/);
    expect((await store.list()).map((summary) => summary.chainId)).toEqual(["seed"]);
    await store.close();
  });

  it("lists only readable .trace files with valid names", async () => {
    const dir = await freshDir();
    const store = new FileTraceStore({ dir });
    await store.append("good", chainStartEvent("good"));
    await writeFile(join(dir, "garbage.trace"), Buffer.from("not a trace at all"));
    await writeFile(join(dir, "notes.txt"), "hello");
    await writeFile(join(dir, "bad name.trace"), encodeTraceFrame(chainStartEvent("bad name")));
    expect((await store.list()).map((summary) => summary.chainId)).toEqual(["good"]);
    expect(await store.prune({ olderThanMs: 0 })).toBe(0); // "good" is still being written
    await store.close();
  });

  it("lists the newest traces under a limit loading no more of them than that takes, as the unlimited list would", async () => {
    const dir = await freshDir();
    const writer = new FileTraceStore({ dir, fsync: false });
    const ids = Array.from({ length: 40 }, (_, index) => `t${String(index).padStart(2, "0")}`);
    for (const [index, id] of ids.entries()) {
      // Two of each creation time: ties are ordered by chain id.
      await writer.append(id, chainStartEvent(id, { createdAt: 1_700_000_000_000 + Math.floor(index / 2) }));
      await writer.append(id, chainEndEvent());
    }
    await writer.close();
    // The newest trace has a whole first record but a damaged one after it: it is not listed.
    await writeFile(join(dir, "t39.trace"), Buffer.concat([encodeTraceFrame(chainStartEvent("t39", { createdAt: 1_800_000_000_000 })), Buffer.from([0, 0, 0, 3, 1, 2, 3]), encodeTraceFrame(chainEndEvent())]));
    // A file whose first record cannot be read alone is loaded whole, and listed if it loads.
    await writeFile(join(dir, "garbage.trace"), Buffer.from("not a trace at all"));
    const store = new FileTraceStore({ dir });
    const all = await store.list();
    expect(all.map((summary) => summary.chainId).slice(0, 4)).toEqual(["t38", "t36", "t37", "t34"]);
    const load = vi.spyOn(store, "load");
    for (const limit of [1, 3, 4, 39, 100]) {
      load.mockClear();
      expect(await store.list({ limit }), `limit ${limit}`).toEqual(all.slice(0, limit));
      // The garbage file, the damaged newest one, and the newest `limit` that load.
      if (limit < 39) expect(load.mock.calls.length, `limit ${limit}`).toBe(limit + 2);
    }
    await expect(store.list({ limit: -1 })).rejects.toThrow(/limit/);
  });

  it("reads large trace files one at a time when listing (a store of them costs the memory of one)", async () => {
    const dir = await freshDir();
    const writer = new FileTraceStore({ dir, fsync: false });
    for (const id of ["s1", "s2", "s3"]) {
      await writer.append(id, chainStartEvent(id));
      await writer.append(id, chainEndEvent());
    }
    await writer.close();
    // Sparse hand-made files past 8 MiB: zeros, read whole by a load, listed as nothing.
    for (const id of ["big1", "big2", "big3", "big4"]) {
      await writeFile(join(dir, `${id}.trace`), "");
      await truncate(join(dir, `${id}.trace`), 20 * 1024 * 1024);
    }
    const store = new FileTraceStore({ dir });
    const load = store.load.bind(store);
    let inFlight = 0;
    let most = 0;
    vi.spyOn(store, "load").mockImplementation(async (chainId: string) => {
      const large = chainId.startsWith("big");
      if (large) most = Math.max(most, ++inFlight);
      try {
        return await load(chainId);
      } finally {
        if (large) inFlight--;
      }
    });
    expect((await store.list()).map((summary) => summary.chainId).sort()).toEqual(["s1", "s2", "s3"]);
    expect(most).toBe(1);
  });

  it("lists nothing when the folder does not exist yet", async () => {
    expect(await new FileTraceStore({ dir: await freshDir() }).list()).toEqual([]);
    expect(await new FileTraceStore({ dir: await freshDir() }).chainIds()).toEqual([]);
  });

  it("says why it cannot list a folder that is a file (STORE_FAILED with the reason)", async () => {
    const file = await freshDir();
    await mkdir(join(file, ".."), { recursive: true });
    await writeFile(file, "x");
    await expect(new FileTraceStore({ dir: file }).chainIds()).rejects.toMatchObject({
      code: "STORE_FAILED",
      message: expect.stringContaining(`Could not list the trace folder ${file}: ENOTDIR: not a directory`),
    });
  });

  it("names the chain ids of its trace files without reading them", async () => {
    const dir = await freshDir();
    const writer = new FileTraceStore({ dir, fsync: false });
    await writer.append("kept", chainStartEvent("kept"));
    await writer.close();
    await writeFile(join(dir, "damaged.trace"), Buffer.from("not a trace"));
    await writeFile(join(dir, "not an id!.trace"), Buffer.from(""));
    await writeFile(join(dir, "other.txt"), Buffer.from(""));
    const store = new FileTraceStore({ dir });
    const load = vi.spyOn(store, "load");
    expect((await store.chainIds()).sort()).toEqual(["damaged", "kept"]);
    expect(load).not.toHaveBeenCalled();
  });

  it("reads its files back through loadTraceFile, and reports a missing path as TRACE_NOT_FOUND", async () => {
    const dir = await freshDir();
    const store = new FileTraceStore({ dir });
    await store.append("path", chainStartEvent("path"));
    await store.append("path", chainEndEvent());
    expect((await loadTraceFile(join(dir, "path.trace"))).outcome?.status).toBe("ok");
    await expectCode(loadTraceFile(join(dir, "missing.trace")), "TRACE_NOT_FOUND");
    await store.close();
  });

  it("refuses a file whose events fold into what no reader takes, naming the file and the field", async () => {
    const dir = await freshDir();
    await mkdir(dir, { recursive: true });
    const path = join(dir, "hand-made.trace");
    const write = (...events: Parameters<typeof encodeTraceFrame>[0][]): Promise<void> => writeFile(path, Buffer.concat(events.map(encodeTraceFrame)));
    await write(chainStartEvent("hand-made", { policy: { maxToolCalls: -5 } as never }), chainEndEvent());
    await expectCode(loadTraceFile(path), "TRACE_INVALID");
    await expect(loadTraceFile(path)).rejects.toThrow(
      `${path}: not a chain trace: its policy is not one a chain could have run under: ChainPolicy.maxToolCalls must be an integer from 0 to 1000000; got -5 (a damaged or hand-edited file?).`,
    );
    await write(chainStartEvent("hand-made"), chainEndEvent({ status: "error", error: null as never }));
    await expect(loadTraceFile(path)).rejects.toThrow(`${path}: Trace event 1 (chain-end) has a malformed "error".`);
    await expect(new FileTraceStore({ dir }).load("hand-made")).rejects.toThrow(`${path}: Trace event 1 (chain-end) has a malformed "error".`);
  });

  it("refuses what is not a regular trace file at once: a FIFO, a directory, a file past MAX_TRACE_FILE_BYTES", async () => {
    const dir = await freshDir();
    const store = new FileTraceStore({ dir });
    await store.append("good", chainStartEvent("good"));
    await store.append("good", chainEndEvent());
    // A FIFO nobody writes to: reading it would wait forever (and so would `trace ls`).
    execFileSync("mkfifo", [join(dir, "fifo.trace")]);
    await expectCode(loadTraceFile(join(dir, "fifo.trace")), "TRACE_INVALID");
    await expect(loadTraceFile(join(dir, "fifo.trace"))).rejects.toThrow(/is not a regular file/);
    await mkdir(join(dir, "folder.trace"));
    await expectCode(loadTraceFile(join(dir, "folder.trace")), "TRACE_INVALID");
    // A sparse file: its size is checked before anything is read.
    await truncate(join(dir, "huge.trace"), MAX_TRACE_FILE_BYTES + 1).catch(async () => {
      await writeFile(join(dir, "huge.trace"), "");
      await truncate(join(dir, "huge.trace"), MAX_TRACE_FILE_BYTES + 1);
    });
    await expect(loadTraceFile(join(dir, "huge.trace"))).rejects.toThrow(new RegExp(`over the ${MAX_TRACE_FILE_BYTES}`));
    // Listing skips them all and still finds the real one.
    expect((await store.list()).map((summary) => summary.chainId)).toEqual(["good"]);
    await store.close();
  });

  it("says why a trace file could not be read", async () => {
    const dir = await freshDir();
    await mkdir(dir, { recursive: true });
    await symlink(join(dir, "loop-b.trace"), join(dir, "loop-a.trace"));
    await symlink(join(dir, "loop-a.trace"), join(dir, "loop-b.trace"));
    await expectCode(loadTraceFile(join(dir, "loop-a.trace")), "STORE_FAILED");
    await expect(loadTraceFile(join(dir, "loop-a.trace"))).rejects.toThrow(/Could not read the trace file .*: ELOOP/);
  });

  it("refuses a chain-start whose chain id has a log written by another store (process)", async () => {
    const dir = await freshDir();
    const first = new FileTraceStore({ dir, fsync: false });
    const second = new FileTraceStore({ dir, fsync: false });
    await first.append("shared", chainStartEvent("shared"));
    await first.append("shared", toolCallEvent(0));
    await expectCode(second.append("shared", chainStartEvent("shared")), "TRACE_INVALID");
    // Nothing more from that store goes into the other run's log.
    await expectCode(second.append("shared", toolCallEvent(1)), "STORE_FAILED");
    await expectCode(second.append("shared", chainEndEvent()), "STORE_FAILED");
    await first.append("shared", toolResultEvent(0));
    const trace = await first.load("shared");
    expect(trace.calls.map((call) => [call.callId, call.state])).toEqual([["c0", "completed"]]);
    expect(trace.outcome).toBeUndefined();
    // Other chain ids of that store are unaffected.
    await second.append("fresh", chainStartEvent("fresh"));
    expect((await second.load("fresh")).chainId).toBe("fresh");
  });

  it("grants a resume claim to exactly one of several processes claiming at once", async () => {
    const dir = await freshDir();
    const script = fileURLToPath(new URL("./fixtures/claim-resume.ts", import.meta.url));
    const contenders = ["p0", "p1", "p2", "p3"];
    const answers = await Promise.all(
      contenders.map(
        (id) =>
          new Promise<string>((resolve, reject) => {
            const child = spawn(process.execPath, [script, dir, "parent", id], { stdio: ["ignore", "pipe", "pipe"] });
            let out = "";
            let err = "";
            child.stdout.on("data", (chunk: Buffer) => (out += chunk.toString()));
            child.stderr.on("data", (chunk: Buffer) => (err += chunk.toString()));
            child.on("error", reject);
            child.on("exit", (code) => (code === 0 ? resolve(out.trim()) : reject(new Error(`claim child ${id} exited ${String(code)}: ${err}`))));
          }),
      ),
    );
    const winners = contenders.filter((_id, index) => answers[index] === "claimed");
    expect(winners).toHaveLength(1);
    expect(answers.filter((answer) => answer !== "claimed")).toEqual([`held by ${winners[0]}`, `held by ${winners[0]}`, `held by ${winners[0]}`]);
    expect(JSON.parse(await readFile(join(dir, "parent.resumed"), "utf8"))).toMatchObject({ resumedAs: winners[0] });
  });

  it("reads a claim cut short by a crash as held, by an unknown chain", async () => {
    const dir = await freshDir();
    await mkdir(dir, { recursive: true });
    await writeFile(join(dir, "parent.resumed"), "");
    const store = new FileTraceStore({ dir, fsync: false });
    expect(await store.claimResume("parent", "mine")).toBe(UNREADABLE_RESUME_CLAIM);
    await writeFile(join(dir, "other.resumed"), '{"resumedAs":"../../etc"}');
    expect(await store.claimResume("other", "mine")).toBe(UNREADABLE_RESUME_CLAIM);
  });

  it("leaves every started call on disk when its process is killed mid-chain", async () => {
    const dir = await freshDir();
    const script = fileURLToPath(new URL("./fixtures/crash-mid-chain.ts", import.meta.url));
    const child = spawn(process.execPath, [script, dir, "killed-chain"], { stdio: ["ignore", "ignore", "pipe"] });
    let stderr = "";
    child.stderr.on("data", (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const signal = await new Promise<NodeJS.Signals | null>((resolve, reject) => {
      child.on("error", reject);
      child.on("exit", (_code, exitSignal) => resolve(exitSignal));
    });
    expect(signal, stderr).toBe("SIGKILL");
    const trace = await new FileTraceStore({ dir }).load("killed-chain");
    expect(trace.outcome).toBeUndefined();
    expect(trace.calls.map((call) => [call.callId, call.tool, call.state, call.risk])).toEqual([
      ["c0", "echo", "completed", "safe"],
      ["c1", "send_email", "in-doubt", "high"],
    ]);
    expect(trace.calls[1]?.args).toEqual({ to: "ceo@example.com" });
  });
});
