import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // Test files run in child processes: a native abort inside isolated-vm takes down one worker,
    // not the runner. isolated-vm asks for --no-node-snapshot on Node 20+.
    pool: "forks",
    execArgv: ["--no-node-snapshot"],
  },
});
