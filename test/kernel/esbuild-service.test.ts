import { describe, expect, it } from "vitest";
import { callEsbuild, esbuildMessages, EsbuildTimeoutError } from "../../src/kernel/esbuild-service.ts";

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
    const bystander = callEsbuild((api) => api.transform(redeclarations(4_000), { loader: "ts", logLevel: "silent" })).catch((error: unknown) => error);
    const bounded = callEsbuild((api) => api.transform(redeclarations(60_000), { loader: "ts", logLevel: "silent" }), { timeoutMs: 300 }).catch(
      (error: unknown) => error,
    );
    const stopped = await bounded;
    expect(stopped).toBeInstanceOf(EsbuildTimeoutError);
    expect(stopped).toMatchObject({ timeoutMs: 300, message: "esbuild did not finish within 300 ms and was stopped" });
    expect(performance.now() - started).toBeLessThan(10_000);
    // The bystander's answer is esbuild's, from the new process: every redeclaration refused.
    expect(esbuildMessages(await bystander)).toHaveLength(3_999);
    // And the next call is served as usual.
    expect((await callEsbuild((api) => api.transform("export const b = 2", { loader: "ts" }))).code).toContain("b = 2");
  }, 60_000);
});
