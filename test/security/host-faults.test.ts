/**
 * Attack family: host-side faults a script can provoke or meet: a tool that hangs past its
 * timeout ignoring its signal, a tool returning a 100 MB string (offloaded to the blob store:
 * only a preview and a ref enter the isolate, and the host heap returns to its baseline), and
 * approval handlers that throw, reject, answer garbage or never answer. Each call gets a clear
 * per-call outcome, the chain goes on, the trace is whole and the host stays healthy.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type ApprovalHandler,
  type ArtifactRef,
  type BlobStore,
  type BlobStat,
  ChainRuntimeError,
  defineTool,
  sha256Hex,
} from "../../src/index.ts";
import { runAttackTable } from "./attack-table.ts";
import { type Attack, createHarness, DRIVERS, expectHostUntouched, type Harness, settledHeapBytes } from "./harness.ts";

const HUNDRED_MB = 100 * 1024 * 1024;

/** A content-addressed store that keeps only sizes, so the host's own heap can be measured. */
class SizeOnlyBlobStore implements BlobStore {
  readonly sizes = new Map<string, number>();
  async put(bytes: Uint8Array | string): Promise<ArtifactRef> {
    const ref = `sha256:${sha256Hex(bytes)}` as ArtifactRef;
    this.sizes.set(ref, typeof bytes === "string" ? Buffer.byteLength(bytes) : bytes.byteLength);
    return ref;
  }
  async resolve(ref: ArtifactRef): Promise<Uint8Array> {
    throw new ChainRuntimeError("ARTIFACT_NOT_FOUND", `size-only store keeps no bytes (${ref})`);
  }
  async stat(ref: ArtifactRef): Promise<BlobStat | undefined> {
    const bytes = this.sizes.get(ref);
    return bytes === undefined ? undefined : { ref, bytes, mimeType: "text/plain", createdAt: 0, pins: 0 };
  }
  async pin(): Promise<void> {}
  async unpin(): Promise<void> {}
  async gc(): Promise<{ removed: number; freedBytes: number }> {
    return { removed: 0, freedBytes: 0 };
  }
}

const hundredMb = defineTool({
  name: "hundred_mb",
  description: "Returns a 100 MB string.",
  inputSchema: { type: "object" } as const,
  execute: () => "z".repeat(HUNDRED_MB),
});

describe.each(DRIVERS)("a tool returning 100 MB [%s]", (driver) => {
  let harness: Harness;
  let store: SizeOnlyBlobStore;
  beforeAll(() => {
    store = new SizeOnlyBlobStore();
    harness = createHarness(driver, { tools: [hundredMb], blobStore: store, policy: { callTimeoutMs: 5000, approvalTimeoutMs: 100, totalTimeoutMs: 10_000, cpuTimeMs: 2000 } });
  });
  afterAll(async () => {
    await harness.close();
  });

  it("is offloaded: the isolate gets a preview and a ref, the host heap returns to baseline", async () => {
    const baseline = settledHeapBytes();
    const result = await harness.run(`
      const r = await tools.hundred_mb({});
      return { status: r.status, ref: r.artifactRef, bytes: r.bytes, previewChars: r.text.length, head: r.text.slice(0, 3) };
    `);
    expect(result.status).toBe("ok");
    const value = result.returnValue as { status: string; ref: string; bytes: number; previewChars: number; head: string };
    expect(value).toMatchObject({ status: "ok", bytes: HUNDRED_MB, head: "zzz" });
    expect(value.previewChars).toBeLessThan(1024);
    expect(store.sizes.get(value.ref)).toBe(HUNDRED_MB);
    expect(result.stats.heapBytes).toBeLessThan(32 * 1024 * 1024);
    harness.expectTraceWhole(result);
    // Nothing keeps the 100 MB alive once the chain ended (trace, hooks, results hold the preview).
    expect(settledHeapBytes() - baseline).toBeLessThan(48 * 1024 * 1024);
    expectHostUntouched();
    await harness.expectHealthy();
  });
});

const throwingSync: ApprovalHandler = {
  request: () => {
    throw new Error("approval backend exploded");
  },
};
const rejecting: ApprovalHandler = { request: () => Promise.reject(new TypeError("approval service down")) };
const garbage: ApprovalHandler = { request: () => Promise.resolve("yes please" as never) };
let neverSignalFired = 0;
const never: ApprovalHandler = {
  request: (_request, { signal }) => {
    signal.addEventListener("abort", () => neverSignalFired++, { once: true });
    return new Promise(() => undefined);
  },
};

/** Calls the risky tool, then proves the chain goes on with a safe call. */
const approvalScript = 'const r = await tools.risky({ x: 1 }); const next = await tools.echo({ value: "after" }); return [r.status, r.code, next.structured.value];';
const deniedThen = (code: string): Attack["expected"] => ({ status: "ok", returnValue: ["denied", code, "after"] });

const hangAttacks: Attack[] = [
  {
    name: "a tool that ignores its signal and never finishes times out; the chain goes on",
    code: 'const r = await tools.hang({}); const next = await tools.echo({ value: "after" }); return [r.status, r.code, next.structured.value];',
    expected: { status: "ok", returnValue: ["error", "TIMEOUT", "after"] },
    check: (result) => expect(result.callTrace.map((record) => record.status)).toEqual(["timeout", "ok"]),
  },
  {
    name: "eight hanging tools at once time out together, slots are released",
    code: 'const rs = await Promise.all(Array.from({ length: 8 }, () => tools.hang({}))); const next = await tools.echo({ value: "after" }); return [rs.map((r) => r.code), next.status];',
    policy: { totalTimeoutMs: 2000 },
    expected: { status: "ok", returnValue: [Array(8).fill("TIMEOUT"), "ok"] },
  },
  {
    name: "the script returns while a tool hangs: the call is cancelled and traced",
    code: 'tools.hang({}); await tools.echo({ value: 1 }); return "early";',
    expected: { status: "ok", returnValue: "early" },
    check: (result) => expect(result.callTrace.map((record) => [record.tool, record.status])).toEqual([["hang", "error"], ["echo", "ok"]]),
  },
];
runAttackTable("hanging tools", hangAttacks);

runAttackTable("approval handler that throws synchronously", [{ name: "denied, chain continues", code: approvalScript, expected: deniedThen("APPROVAL_DENIED") }], { approvalHandler: throwingSync });
runAttackTable("approval handler that rejects", [{ name: "denied, chain continues", code: approvalScript, expected: deniedThen("APPROVAL_DENIED") }], { approvalHandler: rejecting });
runAttackTable("approval handler that answers garbage", [{ name: "denied, chain continues", code: approvalScript, expected: deniedThen("APPROVAL_DENIED") }], { approvalHandler: garbage });
runAttackTable(
  "approval handler that never answers",
  [
    {
      name: "timed out as denied, its signal fired, the tool never ran",
      code: approvalScript,
      expected: deniedThen("APPROVAL_TIMEOUT"),
      check: (_result, harness) => {
        expect(neverSignalFired).toBeGreaterThan(0);
        expect(harness.ledger.executions.get("risky") ?? 0).toBe(0);
      },
    },
    {
      name: "the script ends while approval is pending: cancelled, never executed",
      code: 'tools.risky({}); return "gone";',
      expected: { status: "ok", returnValue: "gone" },
      check: (result, harness) => {
        expect(result.callTrace.map((record) => record.code)).toEqual(["CANCELLED"]);
        expect(harness.ledger.executions.get("risky") ?? 0).toBe(0);
      },
    },
  ],
  { approvalHandler: never },
);
