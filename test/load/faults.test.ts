/**
 * Fault injection: parts of the host fail mid-chain. A blob store whose `put` throws (the
 * offloading call gets a clear `STORE_FAILED`, the chain goes on), an approval handler that
 * crashes, hooks that throw (reported through `onHookError`, calls unaffected), a trace store
 * whose `append` throws (the `TraceRecorder` keeps the error, the chain is unaffected) and an
 * abort mid-chain (status `cancelled`, the running call's signal fires, every call traced).
 * Nothing is silently dropped: every call the host saw is in the trace.
 */
import { describe, expect, it } from "vitest";
import { type BlobStore, defineTool, MemoryBlobStore } from "../../src/index.ts";
import { fingerprintToolbox, MemoryTraceStore, TraceRecorder, type TraceEvent } from "../../src/trace/index.ts";
import { createHarness, DRIVERS, expectHostUntouched } from "../security/harness.ts";

const bigText = defineTool({
  name: "big_text",
  description: "Returns 64 KB of text (offloaded).",
  inputSchema: { type: "object" } as const,
  execute: () => "b".repeat(64 * 1024),
});

/** A blob store whose writes fail; reads and pins work. */
class FailingPutStore extends MemoryBlobStore {
  puts = 0;
  override async put(): Promise<never> {
    this.puts++;
    throw new Error("disk full (injected).");
  }
}

/** A trace store whose appends fail after `okAppends` successes. */
class FailingTraceStore extends MemoryTraceStore {
  appends = 0;
  readonly okAppends: number;
  constructor(okAppends: number) {
    super();
    this.okAppends = okAppends;
  }
  override async append(chainId: string, event: TraceEvent): Promise<void> {
    if (++this.appends > this.okAppends) throw new Error("trace volume gone (injected)");
    await super.append(chainId, event);
  }
}

describe.each(DRIVERS)("fault injection [%s]", (driver) => {
  it("blob store put fails mid-chain: that call is STORE_FAILED, the chain goes on", async () => {
    const store = new FailingPutStore();
    const harness = createHarness(driver, { tools: [bigText], blobStore: store as BlobStore });
    try {
      const result = await harness.run(`
        const before = await tools.echo({ value: "small stays inline" });
        const big = await tools.big_text({});
        const after = await tools.echo({ value: "after" });
        return [before.status, big.status, big.code, big.text, after.structured.value];
      `);
      expect(result.returnValue).toEqual([
        "ok",
        "error",
        "STORE_FAILED",
        'Tool "big_text" ran, but its result could not be stored: disk full (injected). Do not repeat the call blindly: it may have had side effects.',
        "after",
      ]);
      expect(store.puts).toBe(1);
      expect(result.callTrace.map((record) => record.code ?? record.status)).toEqual(["ok", "STORE_FAILED", "ok"]);
      harness.expectTraceWhole(result);
      // A large return value with a failing store stays inline rather than being lost.
      const returned = await harness.run('return "r".repeat(10000);');
      expect(returned.status).toBe("ok");
      expect(returned.returnValue).toBe("r".repeat(10000));
      await harness.expectHealthy();
    } finally {
      await harness.close();
    }
  });

  it("approval handler crashes mid-chain: denied, later calls run", async () => {
    let asked = 0;
    const harness = createHarness(driver, {
      approvalHandler: {
        request: async () => {
          asked++;
          if (asked === 2) throw new Error("approval process crashed (injected)");
          return "approved";
        },
      },
    });
    try {
      const result = await harness.run(`
        const rs = [];
        for (let i = 0; i < 3; i++) rs.push((await tools.risky({ i })).status);
        return rs;
      `);
      expect(result.returnValue).toEqual(["ok", "denied", "ok"]);
      expect(harness.ledger.executions.get("risky")).toBe(2);
      expect(result.callTrace[1]?.code).toBe("APPROVAL_DENIED");
      harness.expectTraceWhole(result);
    } finally {
      await harness.close();
    }
  });

  it("hooks that throw are reported and never break a call or a chain", async () => {
    const reported: string[] = [];
    const harness = createHarness(driver, {
      hooks: {
        TOOL_START: () => {
          throw new Error("start hook (injected)");
        },
        TOOL_END: () => Promise.reject(new Error("end hook (injected)")),
        CHAIN_START: () => {
          throw new Error("chain start hook (injected)");
        },
        CHAIN_END: () => {
          throw new Error("chain end hook (injected)");
        },
        onHookError: (_error, event) => reported.push(event),
      },
    });
    try {
      const result = await harness.run("const a = await tools.echo({ value: 1 }); const b = await tools.echo({ value: 2 }); return [a.status, b.status];");
      expect(result.status).toBe("ok");
      expect(result.returnValue).toEqual(["ok", "ok"]);
      expect(reported.sort()).toEqual(["CHAIN_END", "CHAIN_START", "TOOL_END", "TOOL_END", "TOOL_START", "TOOL_START"]);
      harness.expectTraceWhole(result);
    } finally {
      await harness.close();
    }
  });

  it("an onHookError that throws too is dropped: the chain still ends with its result", async () => {
    const reported: string[] = [];
    const harness = createHarness(driver, {
      hooks: {
        CHAIN_START: () => {
          throw new Error("chain start hook (injected)");
        },
        TOOL_END: () => Promise.reject(new Error("end hook (injected)")),
        CHAIN_END: () => {
          throw new Error("chain end hook (injected)");
        },
        onHookError: (_error, event) => {
          reported.push(event);
          throw new Error("onHookError (injected)");
        },
      },
    });
    try {
      const result = await harness.run("return (await tools.echo({ value: 1 })).status;");
      expect(result.status).toBe("ok");
      expect(result.returnValue).toBe("ok");
      expect(reported.sort()).toEqual(["CHAIN_END", "CHAIN_START", "TOOL_END"]);
      harness.expectTraceWhole(result);
    } finally {
      await harness.close();
    }
  });

  it("trace store fails mid-chain: the recorder keeps the error, the chain is unaffected", async () => {
    const store = new FailingTraceStore(2); // chain-start and the first tool-call land, then the volume goes
    const chainId = "fault-trace-1";
    const recorder = new TraceRecorder({ store, chainId });
    const harness = createHarness(driver, { hooks: recorder.hooks() });
    try {
      await recorder.start({
        source: "…",
        policy: harness.chain.policy,
        toolbox: fingerprintToolbox(harness.chain.toolbox.callable()),
        seed: 1,
        clockStart: 0,
      });
      const result = await harness.run("const a = await tools.echo({ value: 1 }); const b = await tools.echo({ value: 2 }); return [a.structured.value, b.structured.value];", { chainId });
      await recorder.end(result);
      expect(result.status).toBe("ok");
      expect(result.returnValue).toEqual([1, 2]);
      expect(result.callTrace).toHaveLength(2);
      expect(recorder.error?.code).toBe("STORE_FAILED");
      // Every lost event is accounted for: 2 results, 1 call and chain-end after the first 2 appends.
      expect(recorder.failures.map((failure) => failure.event)).toEqual(["tool-result", "tool-call", "tool-result", "chain-end"]);
      harness.expectTraceWhole(result);
    } finally {
      await harness.close();
    }
  });

  it("abort mid-chain: cancelled, the running call's signal fires, every call traced", async () => {
    const harness = createHarness(driver, { policy: { totalTimeoutMs: 3000, callTimeoutMs: 2000, approvalTimeoutMs: 1000 } });
    try {
      const controller = new AbortController();
      const pending = harness.run(
        "await tools.echo({ value: 1 }); const r = await Promise.all([tools.wait({}), tools.wait({})]); return r;",
        { signal: controller.signal },
      );
      const waitStarted = async (): Promise<void> => {
        while ((harness.ledger.executions.get("wait") ?? 0) < 2) await new Promise((resolve) => setTimeout(resolve, 5));
      };
      await waitStarted();
      controller.abort(new Error("user pressed stop (injected)"));
      const result = await pending;
      expect(result.status).toBe("cancelled");
      expect(result.returnValue).toBeUndefined();
      expect(result.callTrace.map((record) => [record.tool, record.code ?? record.status])).toEqual([
        ["echo", "ok"],
        ["wait", "CANCELLED"],
        ["wait", "CANCELLED"],
      ]);
      harness.expectTraceWhole(result);
      expectHostUntouched();
      await harness.expectHealthy();
    } finally {
      await harness.close();
    }
  });

  it("abort while an approval is pending: cancelled, the tool never runs", async () => {
    const harness = createHarness(driver, {
      policy: { totalTimeoutMs: 3000, callTimeoutMs: 2000, approvalTimeoutMs: 1000 },
      approvalHandler: { request: (_request, { signal }) => new Promise((resolve) => signal.addEventListener("abort", () => resolve("approved"))) },
    });
    try {
      const controller = new AbortController();
      const pending = harness.run("return (await tools.risky({})).status;", { signal: controller.signal });
      while ((harness.ledger.toolStarts.size ?? 0) === 0) await new Promise((resolve) => setTimeout(resolve, 5));
      await new Promise((resolve) => setTimeout(resolve, 20));
      controller.abort();
      const result = await pending;
      expect(result.status).toBe("cancelled");
      expect(harness.ledger.executions.get("risky") ?? 0).toBe(0);
      expect(result.callTrace.map((record) => record.code)).toEqual(["CANCELLED"]);
      harness.expectTraceWhole(result);
    } finally {
      await harness.close();
    }
  });
});
