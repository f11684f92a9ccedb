/**
 * The sandbox child's entry guard, in real child processes: a main thread that blocks inside an
 * entry (as the child does while its isolate runs) and grows its memory or outlives its deadline
 * is ended by the guard's worker with SIGKILL, after one stderr line the host maps to the
 * outcome. The host's side of that mapping is exercised by the security suites (memory bombs
 * under the process driver end as MemoryLimitError).
 */
import { spawn } from "node:child_process";
import { describe, expect, it } from "vitest";
import { GUARD_GRACE_MS, guardReasonIn } from "../../sandbox/child/entry-guard.ts";

const CHILD = new URL("../fixtures/guard/guard-child.ts", import.meta.url);

interface Ended {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  readonly stderr: string;
  readonly ms: number;
}

function runChild(mode: string): Promise<Ended> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const child = spawn(process.execPath, [CHILD.pathname, mode], { stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    child.on("error", reject);
    child.on("close", (code, signal) => resolve({ code, signal, stdout, stderr, ms: performance.now() - started }));
  });
}

describe("EntryGuard", () => {
  it("ends a process whose memory passes the cap during an entry, naming memory", async () => {
    const ended = await runChild("memory");
    expect(ended.stdout).toContain("entering");
    expect(ended.signal).toBe("SIGKILL");
    expect(guardReasonIn(ended.stderr)).toBe("memory");
  });

  it("ends a process stuck in an entry past its deadline and the grace, naming cpu", async () => {
    const ended = await runChild("stuck");
    expect(ended.signal).toBe("SIGKILL");
    expect(guardReasonIn(ended.stderr)).toBe("cpu");
    expect(ended.ms).toBeGreaterThanOrEqual(GUARD_GRACE_MS);
  });

  it("still sees a stuck entry after thousands of short ones and a spell asleep", async () => {
    const ended = await runChild("busy-then-stuck");
    expect(ended.signal).toBe("SIGKILL");
    expect(guardReasonIn(ended.stderr)).toBe("cpu");
  });

  it("leaves alone a process that left its entry in time", async () => {
    const ended = await runChild("calm");
    expect(ended).toMatchObject({ code: 0, signal: null });
    expect(ended.stdout).toContain("calm");
    expect(guardReasonIn(ended.stderr)).toBeUndefined();
  });
});

describe("EntryGuard and a host that dies", () => {
  const ORPHAN_HOST = new URL("../fixtures/sandbox/orphan-host.ts", import.meta.url);
  const alive = (pid: number): boolean => {
    try {
      process.kill(pid, 0);
      return true;
    } catch {
      return false;
    }
  };

  it.runIf(process.platform !== "win32")("ends a child computing when its host exits without closing it (no orphan burning a core)", async () => {
    const host = spawn(process.execPath, ["--no-node-snapshot", ORPHAN_HOST.pathname], { stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    host.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
    host.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    const code = await new Promise<number | null>((resolve) => host.on("close", resolve));
    expect(code, stderr).toBe(0);
    const children = JSON.parse(stdout) as number[];
    expect(children.length).toBeGreaterThan(0);
    const deadline = performance.now() + 5_000;
    while (children.some(alive) && performance.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
    const left = children.filter(alive);
    for (const pid of left) process.kill(pid, "SIGKILL"); // never leave one behind, even on failure
    expect(left).toEqual([]);
  }, 30_000);
});
