import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

describe("a host out of file descriptors", () => {
  it("refuses the first chain and the first esbuild compile with the reason, and recovers (the host hung for good)", async () => {
    // esbuild's synchronous API waited, with no timeout, for a worker thread that could not start.
    const fixture = fileURLToPath(new URL("../fixtures/chain/emfile-compile-host.ts", import.meta.url));
    const host = spawn("bash", ["-c", 'ulimit -n 64 && exec "$0" --no-node-snapshot "$1"', process.execPath, fixture], { stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    host.stdout.setEncoding("utf8").on("data", (text: string) => (stdout += text));
    host.stderr.setEncoding("utf8").on("data", (text: string) => (stderr += text));
    const hung = setTimeout(() => host.kill("SIGKILL"), 20_000);
    const code = await new Promise<number | null>((resolve) => host.on("close", resolve));
    clearTimeout(hung);
    expect({ code, stderr }).toEqual({ code: 0, stderr: "" });
    const report = JSON.parse(stdout) as Record<string, unknown>;
    expect(report).toMatchObject({
      firstRun: expect.stringMatching(/^error: The sandbox failed: Could not start an isolate: Could not build the sandbox prelude: /),
      firstRunAfter: "ok 2",
      firstEsbuild: expect.stringMatching(/^threw COMPILE_FAILED: esbuild could not compile the script: esbuild's process did not start: spawn .* EMFILE$/),
      firstEsbuildAfter: "ok 3",
      uncaught: [],
    });
  }, 30_000);
});
