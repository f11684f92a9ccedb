import { readdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it, onTestFinished } from "vitest";
import {
  callEsbuild,
  EsbuildAnswerTooLargeError,
  esbuildMessages,
  EsbuildTimeoutError,
  MAX_ESBUILD_ANSWER_BYTES,
  setEsbuildAnswerBound,
  stopEsbuildService,
} from "../../src/kernel/esbuild-service.ts";
import { forceGc } from "../security/harness.ts";

/** TypeScript with `n` redeclarations of one `let`: esbuild's time grows with the square of its errors. */
function redeclarations(n: number): string {
  return `enum E { A }\n${"let v = 1;\n".repeat(n)}`;
}

describe("callEsbuild", () => {
  it("answers as esbuild does: a result, or its messages for a script it refuses", async () => {
    const result = await callEsbuild((api) => api.transform("enum E { A }\nexport const a: number = E.A;", { loader: "ts" }));
    expect(result.code).toContain("export const a = ");
    const refused = await callEsbuild((api) => api.transform("let v = 1;\nlet v = 2;", { loader: "ts" })).catch((error: unknown) => error);
    expect(esbuildMessages(refused)?.[0]?.text).toBe('The symbol "v" has already been declared');
  });

  it("stops esbuild's process past timeoutMs, and a call in flight on it runs again on a new one", async () => {
    const started = performance.now();
    // Unbounded, and still running when the bounded call below is stopped with its process.
    const bystander = callEsbuild((api) => api.transform(redeclarations(6_000), { loader: "ts", logLevel: "silent" })).catch((error: unknown) => error);
    const bounded = callEsbuild((api) => api.transform(redeclarations(60_000), { loader: "ts", logLevel: "silent" }), { timeoutMs: 300 }).catch(
      (error: unknown) => error,
    );
    const stopped = await bounded;
    expect(stopped).toBeInstanceOf(EsbuildTimeoutError);
    expect(stopped).toMatchObject({ timeoutMs: 300, message: "esbuild did not finish within 300 ms and was stopped" });
    expect(performance.now() - started).toBeLessThan(10_000);
    // The bystander's answer is esbuild's, from the new process: every redeclaration refused.
    expect(esbuildMessages(await bystander)).toHaveLength(5_999);
    // And the next call is served as usual.
    expect((await callEsbuild((api) => api.transform("export const b = 2", { loader: "ts" }))).code).toContain("b = 2");
  }, 60_000);

  it("keeps nothing of a finished call: its result is collected while esbuild's process lives on", async () => {
    const results = await finishedResults(4);
    // A WeakRef holds its target to the end of the job that read it: collect between turns.
    for (let round = 0; round < 5 && results.some((ref) => ref.deref() !== undefined); round++) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      forceGc();
    }
    expect(results.filter((ref) => ref.deref() !== undefined)).toHaveLength(0);
  });

  it("counts only esbuild's time against the bound: an answer that came while the host's thread was held is taken", async () => {
    // Held from the check phase: the next turn of the event loop runs the call's timer, expired
    // by then, before the I/O that reads esbuild's answer.
    const answer = await new Promise<Promise<{ code: string }>>((resolve) =>
      setImmediate(() => {
        const pending = callEsbuild((api) => api.transform("export const held = 1", { loader: "ts" }), { timeoutMs: 50 });
        const until = performance.now() + 400;
        while (performance.now() < until) {
          // The host's thread held past the bound; esbuild answers meanwhile.
        }
        resolve(pending);
      }),
    );
    expect((await answer).code).toContain("held = 1");
  });
});

describe("callEsbuild: the bound on the size of an answer", () => {
  /** `count` redeclarations of one `let` on one line of `lineChars`: each message carries a copy of the line. */
  const longLine = (count: number, lineChars: number): string => {
    const pad = `/*${"p".repeat(Math.max(0, Math.ceil(lineChars / count) - 16))}*/`;
    return Array.from({ length: count }, () => `let v = 1;${pad}`).join("");
  };
  const bounded = (bytes: number): void => {
    const previous = setEsbuildAnswerBound(bytes);
    stopEsbuildService(); // the bound is read by the watch of a new process
    onTestFinished(() => {
      setEsbuildAnswerBound(previous);
      stopEsbuildService();
    });
  };

  it("is 24 MiB by default: far above a legitimate answer, far below what the messages of a long line can make", () => {
    expect(MAX_ESBUILD_ANSWER_BYTES).toBe(24 * 1024 * 1024);
  });

  it("stops esbuild's process at the head of an answer over it, and the call rejects without its answer being read", async () => {
    bounded(1024 * 1024);
    // 40 messages with a copy of a 100 KB line each: an answer of ~4 MB.
    const refused = await callEsbuild((api) => api.transform(longLine(40, 100_000), { loader: "ts", logLevel: "silent" })).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(EsbuildAnswerTooLargeError);
    expect(refused).toMatchObject({ maxBytes: 1024 * 1024, message: "esbuild's answer was over 1048576 bytes and was not read" });
    // The same messages on short lines make a small answer, read as usual; so is the next call.
    expect(esbuildMessages(await callEsbuild((api) => api.transform(longLine(40, 400), { loader: "ts" })).catch((error: unknown) => error))).toHaveLength(39);
    expect((await callEsbuild((api) => api.transform("export const b = 2", { loader: "ts" }))).code).toContain("b = 2");
  }, 60_000);

  it("runs a call in flight beside the oversized answer again, one at a time, and it gets its own answer", async () => {
    bounded(1024 * 1024);
    // Slower than the oversized one, so in flight when it comes, and its answer (~200 KB) under the bound.
    const bystander = callEsbuild((api) => api.transform(redeclarations(1_500), { loader: "ts", logLevel: "silent" })).catch((error: unknown) => error);
    const oversized = callEsbuild((api) => api.transform(longLine(10, 300_000), { loader: "ts", logLevel: "silent" })).catch((error: unknown) => error);
    expect(await oversized).toBeInstanceOf(EsbuildAnswerTooLargeError);
    expect(esbuildMessages(await bystander)).toHaveLength(1_499);
  }, 60_000);

  it("holds calls made while others run again one at a time behind them: more oversized answers do not reach the bystander", async () => {
    bounded(2 * 1024 * 1024);
    // Slow (~0.5 s), so in flight at the first oversized answer and while it runs again, its answer (~1.4 MB) under the bound.
    const bystander = callEsbuild((api) => api.transform(redeclarations(4_000), { loader: "ts", logLevel: "silent" })).catch((error: unknown) => error);
    const hostile = (): Promise<unknown> =>
      callEsbuild((api) => api.transform(longLine(10, 300_000), { loader: "ts", logLevel: "silent" }), { timeoutMs: 20_000 }).catch((error: unknown) => error);
    const hostiles = [hostile()];
    for (let i = 0; i < 6; i++) {
      await new Promise((resolve) => setTimeout(resolve, 25));
      hostiles.push(hostile());
    }
    for (const refused of await Promise.all(hostiles)) expect(refused).toBeInstanceOf(EsbuildAnswerTooLargeError);
    expect(esbuildMessages(await bystander)).toHaveLength(3_999);
  }, 60_000);

  it("gives up on a call still waiting for its turn at its bound, while the call ahead of it runs", async () => {
    bounded(2 * 1024 * 1024);
    // Both run again one at a time: the oversized one first (refused, alone), then the slow one
    // (~0.5 s), still running when the bounded call is made, which waits behind it.
    const oversized = callEsbuild((api) => api.transform(longLine(10, 300_000), { loader: "ts", logLevel: "silent" })).catch((error: unknown) => error);
    const slow = callEsbuild((api) => api.transform(redeclarations(4_000), { loader: "ts", logLevel: "silent" })).then(
      () => Number.NaN,
      () => performance.now(), // esbuild's refusal of the redeclarations, as expected
    );
    expect(await oversized).toBeInstanceOf(EsbuildAnswerTooLargeError);
    const waiting = callEsbuild((api) => api.transform("export const late = 1", { loader: "ts" }), { timeoutMs: 100 }).then(
      () => "answered",
      (error: unknown) => ({ error, at: performance.now() }),
    );
    const given = await waiting;
    expect(given).toMatchObject({ error: expect.any(EsbuildTimeoutError) });
    // At its bound, not when its turn came (after the slow call).
    expect((given as { at: number }).at).toBeLessThan(await slow);
  }, 60_000);
});

describe("callEsbuild: esbuild's temporary files", () => {
  /** Names in the machine's temporary folder that start with `prefix`. */
  const named = (prefix: string): Set<string> => new Set(readdirSync(tmpdir()).filter((name) => name.startsWith(prefix)));
  const until = async (check: () => boolean, ms: number): Promise<boolean> => {
    const end = performance.now() + ms;
    while (!check() && performance.now() < end) await new Promise((resolve) => setTimeout(resolve, 2));
    return check();
  };

  it("go to a folder of the process's own, removed with it when it is stopped mid-call", async () => {
    // Over 1 MiB: esbuild passes it through a file, and its process writes the output and map beside it.
    const big = `enum E { ${Array.from({ length: 60_000 }, (_, i) => `member_with_a_rather_long_name_${i} = ${i}`).join(", ")} }\nexport const x = E.member_with_a_rather_long_name_1;`;
    const loose = named("esbuild-");
    const folders = named("isochain-esbuild-");
    stopEsbuildService();
    const pending = callEsbuild((api) => api.transform(big, { loader: "ts", sourcemap: "external" }));
    let folder: string | undefined;
    const filled = await until(() => {
      folder ??= [...named("isochain-esbuild-")].find((name) => !folders.has(name));
      return folder !== undefined && readdirSync(join(tmpdir(), folder)).length > 0;
    }, 20_000);
    expect(filled).toBe(true);
    stopEsbuildService(); // mid-call: the call runs again on a new process
    expect(await until(() => !named("isochain-esbuild-").has(folder as string), 5_000)).toBe(true);
    expect((await pending).code).toContain("member_with_a_rather_long_name_59999");
    // Nothing of esbuild's left in the machine's temporary folder: loose, or in a folder of ours
    // (the new process's went with its last call).
    expect([...named("esbuild-")].filter((name) => !loose.has(name))).toEqual([]);
    expect([...named("isochain-esbuild-")].filter((name) => !folders.has(name))).toEqual([]);
  }, 60_000);
});

/** `count` finished calls' results, as weak references (made here: no local of the test's frame holds one). */
async function finishedResults(count: number): Promise<WeakRef<object>[]> {
  const results: WeakRef<object>[] = [];
  for (let i = 0; i < count; i++) {
    results.push(new WeakRef(await callEsbuild((api) => api.transform(`export const n${i} = ${i}`, { loader: "ts" }))));
  }
  return results;
}
