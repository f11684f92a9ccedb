import { duplexPair } from "node:stream";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { FRAME_KIND } from "../../src/bridge/protocol.ts";
import type { InvocationResult } from "../../src/kernel/index.ts";
import { ChildLoop } from "../../sandbox/child/child-loop.ts";
import { ProcessChannel } from "../../sandbox/process-channel.ts";
import {
  CALL_FIELDS,
  isChildMessage,
  PROCESS_MESSAGE_KIND,
  RETURN_PART_CHARS,
  splitReturnJson,
  type ChildMessage,
  type HostMessage,
} from "../../sandbox/process-protocol.ts";
import { getPreludeSource } from "../../sandbox/prelude-bundle.ts";
import { SandboxProcess } from "../../sandbox/sandbox-process.ts";
import { MAX_SPIN_WAIT_US, spinWait } from "../../sandbox/spin-wait.ts";
import { MAX_CALLS_PAST_BUDGET, type SandboxRunOutcome, type SandboxToolCall } from "../../sandbox/sandbox-driver.ts";
import { chainScript } from "../contracts/sandbox-driver.contract.ts";

const LIMITS = { memoryLimitMb: 64, cpuTimeMs: 2_000, totalTimeoutMs: 5_000, maxOutputBytes: 4_096, maxArgumentBytes: 1_024 };
/** The fields of every run here but its script. */
const RUN = { chainId: "wire", scriptName: "chain.js", toolNames: ["echo"], maxToolCalls: 100, limits: LIMITS, seed: 1, clockStart: 0 };

/**
 * A child loop on one end of an in-memory pipe and a host channel on the other: every message the
 * child writes is recorded, in order, and the test answers calls by hand.
 */
function childOnPipe(): {
  host: ProcessChannel<ChildMessage, HostMessage>;
  received: ChildMessage[];
  next: (kind: ChildMessage["kind"]) => Promise<ChildMessage>;
  close: () => void;
} {
  const [hostEnd, childEnd] = duplexPair();
  const received: ChildMessage[] = [];
  let wake: (() => void) | undefined;
  const host = new ProcessChannel<ChildMessage, HostMessage>(hostEnd, isChildMessage, {
    onMessage: (message) => {
      received.push(message);
      wake?.();
    },
    onClose: () => undefined,
  });
  new ChildLoop(childEnd, () => undefined);
  let read = 0;
  const next = async (kind: ChildMessage["kind"]): Promise<ChildMessage> => {
    for (;;) {
      while (read < received.length) {
        const message = received[read++] as ChildMessage;
        if (message.kind === kind) return message;
      }
      await new Promise<void>((resolve) => (wake = resolve));
    }
  };
  return { host, received, next, close: () => host.destroy() };
}

function startChain(host: ProcessChannel<ChildMessage, HostMessage>, body: string, limits = LIMITS): void {
  host.send({ kind: PROCESS_MESSAGE_KIND.run, ...RUN, limits, script: chainScript(body) });
}

const okJson = (text: string): string => JSON.stringify({ status: "ok", text });

describe("sandbox child wire", () => {
  let close: (() => void) | undefined;
  afterEach(() => close?.());

  it("splits calls too large for one frame together, and keeps a console line after them", async () => {
    const child = childOnPipe();
    close = child.close;
    child.host.send({ kind: PROCESS_MESSAGE_KIND.init, memoryLimitMb: 256, maxRunsPerIsolate: 10, preludeSource: getPreludeSource() });
    await child.next(PROCESS_MESSAGE_KIND.ready);
    // 9 calls of 8 MB arguments in one entry: 72 MB together, over the 64 MiB frame limit
    const body = 'const s = "x".repeat(8_000_000); const all = Promise.all(Array.from({ length: 9 }, () => tools.echo({ s }))); console.log("after"); return (await all).length;';
    startChain(child.host, body, { ...LIMITS, memoryLimitMb: 256, maxArgumentBytes: 8 * 1024 * 1024 });
    await child.next(FRAME_KIND.log);
    const batches = child.received.filter((message) => message.kind === PROCESS_MESSAGE_KIND.calls);
    expect(batches.length).toBeGreaterThan(1);
    const callIndexes = batches.flatMap((message) => message.calls.filter((_, i) => i % CALL_FIELDS === 0));
    expect(callIndexes).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8]);
    expect(batches.flatMap((message) => message.calls.filter((_, i) => i % CALL_FIELDS === 3))).toEqual(Array(9).fill(null));
    expect(child.received.at(-1)?.kind).toBe(FRAME_KIND.log);
    child.host.send({ kind: PROCESS_MESSAGE_KIND.results, results: callIndexes.flatMap((callIndex) => [callIndex, okJson("ok"), null]) });
    expect(await child.next(PROCESS_MESSAGE_KIND.outcome)).toMatchObject({ outcome: { status: "ok", returnJson: "9" } });
  }, 30_000);

  it("sends the calls of one entry as one message, and takes their results as one", async () => {
    const child = childOnPipe();
    close = child.close;
    child.host.send({ kind: PROCESS_MESSAGE_KIND.init, memoryLimitMb: 64, maxRunsPerIsolate: 10, preludeSource: getPreludeSource() });
    await child.next(PROCESS_MESSAGE_KIND.ready);
    startChain(child.host, "const r = await Promise.all(Array.from({ length: 50 }, (_, n) => tools.echo({ n }))); return r.map((x) => x.text).join();");
    const calls = await child.next(PROCESS_MESSAGE_KIND.calls);
    if (calls.kind !== PROCESS_MESSAGE_KIND.calls) throw new Error("unreachable");
    expect(calls.calls).toHaveLength(50 * CALL_FIELDS);
    expect(calls.calls.slice(0, 8)).toEqual([0, "echo", '{"n":0}', null, 1, "echo", '{"n":1}', null]);
    const results: (number | string | null)[] = [];
    for (let callIndex = 49; callIndex >= 0; callIndex--) results.push(callIndex, okJson(`r${callIndex}`), null);
    child.host.send({ kind: PROCESS_MESSAGE_KIND.results, results });
    const outcome = await child.next(PROCESS_MESSAGE_KIND.outcome);
    expect(outcome).toMatchObject({ outcome: { status: "ok", returnJson: JSON.stringify(Array.from({ length: 50 }, (_, n) => `r${n}`).join()) } });
    expect(child.received.filter((message) => message.kind === PROCESS_MESSAGE_KIND.calls)).toHaveLength(1);
  });

  it.skipIf(spinWait.cores < 2)("spins while its script waits on the host, with the budget the host last sent", async () => {
    // Whatever else the machine runs meanwhile (other test files): spins judged by the count of runs.
    spinWait.setStallClock(() => undefined);
    const child = childOnPipe();
    close = child.close;
    child.host.send({ kind: PROCESS_MESSAGE_KIND.init, memoryLimitMb: 64, maxRunsPerIsolate: 10, preludeSource: getPreludeSource() });
    await child.next(PROCESS_MESSAGE_KIND.ready);
    child.host.send({ kind: PROCESS_MESSAGE_KIND.run, ...RUN, spinWaitUs: MAX_SPIN_WAIT_US, script: chainScript("await tools.echo({}); await tools.echo({}); return 1;") });
    await child.next(PROCESS_MESSAGE_KIND.calls);
    // The child (this process here) keeps its event loop turning while the script waits.
    expect(spinWait.spinning).toBe(true);
    // A chain started beside it on the host: the next results say no more spinning.
    child.host.send({ kind: PROCESS_MESSAGE_KIND.results, results: [0, okJson("a"), null], spinWaitUs: 0 });
    expect(spinWait.spinning).toBe(true); // not read yet: the results are still in the pipe
    await child.next(PROCESS_MESSAGE_KIND.calls);
    expect(spinWait.spinning).toBe(false);
    child.host.send({ kind: PROCESS_MESSAGE_KIND.results, results: [1, okJson("b"), null] });
    expect(await child.next(PROCESS_MESSAGE_KIND.outcome)).toMatchObject({ outcome: { status: "ok", returnJson: "1" } });
    expect(spinWait.spinning).toBe(false);
  });

  it("sends a return value longer than one frame can carry in pieces before its outcome", async () => {
    const child = childOnPipe();
    close = child.close;
    child.host.send({ kind: PROCESS_MESSAGE_KIND.init, memoryLimitMb: 256, maxRunsPerIsolate: 10, preludeSource: getPreludeSource() });
    await child.next(PROCESS_MESSAGE_KIND.ready);
    startChain(child.host, `return "é".repeat(${RETURN_PART_CHARS + 10});`, { ...LIMITS, memoryLimitMb: 256 });
    const outcome = await child.next(PROCESS_MESSAGE_KIND.outcome);
    const parts = child.received.filter((message) => message.kind === PROCESS_MESSAGE_KIND.returnPart).map((message) => message.text);
    expect(outcome).toMatchObject({ outcome: { status: "ok" }, returnParts: 2 });
    expect(outcome.kind === PROCESS_MESSAGE_KIND.outcome && outcome.outcome.returnJson).toBeFalsy();
    expect(parts.map((text) => text.length)).toEqual([RETURN_PART_CHARS, 12]);
    expect(parts.join("")).toBe(JSON.stringify("é".repeat(RETURN_PART_CHARS + 10)));
  }, 30_000);

  it("keeps the script's order of calls and console lines, a large text's bytes decoded", async () => {
    const child = childOnPipe();
    close = child.close;
    child.host.send({ kind: PROCESS_MESSAGE_KIND.init, memoryLimitMb: 64, maxRunsPerIsolate: 10, preludeSource: getPreludeSource() });
    await child.next(PROCESS_MESSAGE_KIND.ready);
    startChain(child.host, 'const a = tools.echo({ n: 0 }); console.log("between"); const b = tools.echo({ n: 1 }); return [(await a).text.length, (await b).text];');
    await child.next(PROCESS_MESSAGE_KIND.calls);
    await child.next(PROCESS_MESSAGE_KIND.calls);
    expect(child.received.map((message) => message.kind)).toEqual([
      PROCESS_MESSAGE_KIND.ready,
      PROCESS_MESSAGE_KIND.calls,
      FRAME_KIND.log,
      PROCESS_MESSAGE_KIND.calls,
    ]);
    const large = "é😀".repeat(5_000);
    child.host.send({ kind: PROCESS_MESSAGE_KIND.results, results: [1, okJson("second"), null, 0, okJson(""), Buffer.from(large, "utf8")] });
    const outcome = await child.next(PROCESS_MESSAGE_KIND.outcome);
    expect(outcome).toMatchObject({ outcome: { status: "ok", returnJson: JSON.stringify([large.length, "second"]) } });
  });
});

const FAKE_CHILD = fileURLToPath(new URL("../fixtures/sandbox/batch-recording-child.ts", import.meta.url));
const RETURN_PART_CHILD = fileURLToPath(new URL("../fixtures/sandbox/return-part-child.ts", import.meta.url));

/** Runs the return-part child with `script` ({@link RETURN_PART_CHILD}'s format) under a `memoryLimitMb` MB limit. */
async function returnInParts(script: { parts: number[]; announce: number }, memoryLimitMb: number): Promise<SandboxRunOutcome & { killedFromOutside: boolean }> {
  const sandbox = new SandboxProcess({ entry: RETURN_PART_CHILD, memoryLimitMb, maxRunsPerIsolate: 10, preludeSource: "", killGraceMs: 100 });
  try {
    await sandbox.ready;
    const outcome = await sandbox.run({ ...RUN, limits: { ...LIMITS, memoryLimitMb }, script: JSON.stringify(script), onToolCall: () => Promise.reject(new Error("no calls here")) });
    // The host's own kill of a child that broke the protocol is no outside kill (no retry).
    return { ...outcome, killedFromOutside: sandbox.killedFromOutside };
  } finally {
    sandbox.kill();
    await sandbox.exited;
  }
}

describe("a child that numbers its calls out of order", () => {
  it("gets each call index run once: a repeated or earlier index is dropped, as the in-process driver drops it", async () => {
    const entry = fileURLToPath(new URL("../fixtures/sandbox/repeating-child.ts", import.meta.url));
    const sandbox = new SandboxProcess({ entry, memoryLimitMb: 32, maxRunsPerIsolate: 10, preludeSource: "", killGraceMs: 100 });
    try {
      await sandbox.ready;
      const ran: string[] = [];
      const outcome = await sandbox.run({
        ...RUN,
        script: "",
        onToolCall: (call) => {
          ran.push(`${call.callIndex}:${call.argsJson}`);
          return Promise.resolve({ status: "ok", text: call.argsJson });
        },
      });
      expect(outcome.status).toBe("ok");
      expect(ran).toEqual(['0:{"n":0}', '1:{"n":1}']);
    } finally {
      sandbox.kill();
      await sandbox.exited;
    }
  });
});

describe("a child that sends calls its runner would not", () => {
  const SCRIPTED = fileURLToPath(new URL("../fixtures/sandbox/scripted-calls-child.ts", import.meta.url));
  /** Runs the scripted child with `calls` (tool-calls slots); returns the outcome and the calls the host ran. */
  async function sendCalls(calls: (number | string | null)[], forged?: SandboxRunOutcome): Promise<{ outcome: SandboxRunOutcome; ran: SandboxToolCall[] }> {
    const sandbox = new SandboxProcess({ entry: SCRIPTED, memoryLimitMb: 32, maxRunsPerIsolate: 10, preludeSource: "", killGraceMs: 100 });
    try {
      await sandbox.ready;
      const ran: SandboxToolCall[] = [];
      const outcome = await sandbox.run({
        ...RUN,
        script: JSON.stringify({ calls, ...(forged === undefined ? {} : { outcome: forged }) }),
        onToolCall: (call) => {
          ran.push(call);
          return Promise.resolve({ status: "ok", text: "" });
        },
      });
      return { outcome, ran };
    } finally {
      sandbox.kill();
      await sandbox.exited;
    }
  }

  it("is ended at the first call past MAX_CALLS_PAST_BUDGET over the budget, the calls before it run once", async () => {
    const limit = RUN.maxToolCalls + MAX_CALLS_PAST_BUDGET;
    const calls = Array.from({ length: limit + 5 }, (_, i) => [i, "echo", "{}", null]).flat();
    const { outcome, ran } = await sendCalls(calls);
    expect(ran).toHaveLength(limit);
    expect(outcome.status).toBe("error");
    expect(outcome.error?.message).toContain(`it sent call ${limit}, past the ${limit} calls a run may make`);
  });

  it("has its arguments checked against maxArgumentBytes, and a refusal's text bounded, as the in-process runner does", async () => {
    const { ran } = await sendCalls([0, "echo", JSON.stringify({ pad: "x".repeat(2_000) }), null, 1, "echo", "{}", "r".repeat(100_000)]);
    expect(ran[0]).toEqual({ callIndex: 0, tool: "echo", argsJson: "{}", refusal: `tools.echo: arguments exceed ${LIMITS.maxArgumentBytes} bytes.` });
    expect(ran[1]?.refusal?.length).toBeLessThan(10_000);
  });

  it("is ended at a call to a tool the run does not have, which the prelude never sends", async () => {
    const { outcome, ran } = await sendCalls([0, "echo", "{}", null, 1, "x".repeat(1_000_000), "{}", null]);
    expect(ran.map((call) => call.tool)).toEqual(["echo"]);
    expect(outcome.error?.message).toContain("it sent a call to a tool the run does not have");
  });

  it("is killed when it does not report its next context prepared within startTimeoutMs after a run", async () => {
    // Long enough for the stand-in's own start (TypeScript loaded from source) on a loaded machine.
    const sandbox = new SandboxProcess({ entry: SCRIPTED, memoryLimitMb: 32, maxRunsPerIsolate: 10, preludeSource: "", killGraceMs: 100, startTimeoutMs: 3_000 });
    try {
      await sandbox.ready;
      const outcome = await sandbox.run({ ...RUN, script: JSON.stringify({ calls: [], silent: true }), onToolCall: () => Promise.reject(new Error("no calls here")) });
      expect(outcome.status).toBe("ok");
      expect(sandbox.state).toBe("idle");
      await sandbox.exited; // killed: the driver's pool replaces such a child
      expect(sandbox.state).toBe("exited");
      expect(sandbox.killedFromOutside).toBe(false);
    } finally {
      sandbox.kill();
      await sandbox.exited;
    }
  });

  it("has a forged outcome cut to what a runner could have said: no error on ok, only calls it made as unanswered", async () => {
    const forged = { status: "ok" as const, error: { phase: "runtime" as const, name: "E", message: "m" }, unansweredCalls: [0, 0, 7, 1e6], wallMs: 0, cpuMs: 1e308, heapBytes: 0 };
    const { outcome } = await sendCalls([0, "echo", "{}", null], forged);
    expect(outcome.status).toBe("ok");
    expect(outcome.error).toBeUndefined();
    expect(outcome.unansweredCalls).toEqual([0]);
  });
});

describe("a start that never answers", () => {
  it("is ended after startTimeoutMs as a failed start, naming why", async () => {
    const entry = fileURLToPath(new URL("../fixtures/sandbox/silent-child.ts", import.meta.url));
    const started = performance.now();
    const sandbox = new SandboxProcess({ entry, memoryLimitMb: 32, maxRunsPerIsolate: 10, preludeSource: "", killGraceMs: 100, startTimeoutMs: 300 });
    const error: unknown = await sandbox.ready.then(
      () => undefined,
      (thrown: unknown) => thrown,
    );
    expect(error).toMatchObject({ code: "SANDBOX_FAILED", message: "The sandbox process did not start: it did not become ready within 300 ms and was killed" });
    await sandbox.exited;
    expect(sandbox.state).toBe("exited");
    expect(performance.now() - started).toBeGreaterThanOrEqual(290);
  });
});

describe("return values in pieces", () => {
  it("cuts a text into pieces of at most the given length, never inside a surrogate pair", () => {
    const text = "ab😀cd😀😀e";
    for (let size = 2; size <= text.length; size++) {
      const parts = splitReturnJson(text, size);
      expect(parts.join("")).toBe(text);
      for (const part of parts) {
        expect(part.length).toBeGreaterThan(0);
        expect(part.length).toBeLessThanOrEqual(size);
        expect(part.isWellFormed()).toBe(true);
      }
    }
    expect(splitReturnJson("")).toEqual([]);
  });

  it("joins the pieces a child sends into the outcome's return value", async () => {
    const outcome = await returnInParts({ parts: [3, 5, 1], announce: 3 }, 8);
    expect(outcome).toMatchObject({ status: "ok", returnJson: "x".repeat(9) });
  });

  it("ends the run when a child claims another number of pieces than it sent", async () => {
    const outcome = await returnInParts({ parts: [3, 5], announce: 3 }, 8);
    expect(outcome.status).toBe("error");
    expect(outcome.error?.message).toMatch(/announced a return value of 3 pieces and sent 2/);
    expect(outcome.returnJson).toBeUndefined();
    expect(outcome.killedFromOutside).toBe(false);
    // Before a word about the run: still the host's kill, not a lost run to do again.
    expect(await returnInParts({ parts: [], announce: 2 }, 8)).toMatchObject({ status: "error", killedFromOutside: false });
  });

  it("ends the run when a child sends more return value than its isolate's heap could have held", async () => {
    const outcome = await returnInParts({ parts: [600_000, 600_000], announce: 2 }, 1);
    expect(outcome.status).toBe("error");
    expect(outcome.error).toMatchObject({ phase: "limit", name: "SandboxError" });
    expect(outcome.error?.message).toMatch(/longer than its 1 MB isolate could hold/);
    expect(outcome.killedFromOutside).toBe(false);
  });
});

/** Runs `calls` through a {@link SandboxProcess} whose child records the result messages it gets. */
async function resultBatches(calls: [string, string][], answer: (call: SandboxToolCall) => Promise<InvocationResult>): Promise<unknown> {
  const sandbox = new SandboxProcess({ entry: FAKE_CHILD, memoryLimitMb: 64, maxRunsPerIsolate: 10, preludeSource: "", killGraceMs: 100 });
  try {
    await sandbox.ready;
    const outcome: SandboxRunOutcome = await sandbox.run({ ...RUN, script: JSON.stringify(calls), onToolCall: answer });
    expect(outcome.status).toBe("ok");
    return JSON.parse(outcome.returnJson ?? "null");
  } finally {
    sandbox.kill();
    await sandbox.exited;
  }
}

describe("sandbox host wire", () => {
  it("answers every call settled in one tick with one message, later ones with another", async () => {
    const batches = await resultBatches(
      [
        ["echo", '{"n":0}'],
        ["echo", '{"n":1}'],
        ["echo", '{"n":2}'],
      ],
      (call) =>
        call.callIndex === 1
          ? new Promise((resolve) => setTimeout(() => resolve({ status: "ok", text: "late" }), 20))
          : Promise.resolve({ status: "ok", text: `now ${call.callIndex}` }),
    );
    expect(batches).toEqual([
      [
        [0, okJson("now 0"), null],
        [2, okJson("now 2"), null],
      ],
      [[1, okJson("late"), null]],
    ]);
  });

  it("splits results too large for one frame together, and answers one too large alone with an error", async () => {
    const mib = 1024 * 1024;
    const sizes = [40 * mib, 40 * mib, 65 * mib];
    const batches = (await resultBatches(
      sizes.map((_, n) => ["echo", `{"n":${n}}`]),
      (call) => Promise.resolve({ status: "ok", text: "x".repeat(sizes[call.callIndex] as number) }),
    )) as [number, string, number | null][][];
    expect(batches.map((batch) => batch.map(([callIndex, , bytes]) => [callIndex, bytes]))).toEqual([[[0, 40 * mib]], [[1, 40 * mib]], [[2, null]]]);
    const tooLarge = JSON.parse((batches[2] as [number, string, null][])[0]?.[1] ?? "{}") as { status: string; code: string; text: string };
    expect(tooLarge).toMatchObject({ status: "error", code: "BRIDGE_ERROR" });
    expect(tooLarge.text).toMatch(/too large for the sandbox pipe/);
  });
});
