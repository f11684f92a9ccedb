import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: "forks",
    // The long fuzz and load modes run outside CI; see package.json scripts.
    reporters: process.env.CI ? ["default"] : ["default"],
  },
});
