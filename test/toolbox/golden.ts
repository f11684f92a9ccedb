// Golden-file comparison. `UPDATE_GOLDEN=1 npx vitest run test/toolbox` rewrites the files;
// review the diff by eye before keeping it.
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { expect } from "vitest";

const FIXTURES = join(import.meta.dirname, "..", "fixtures");

/** Compares `actual` with the fixture at `relativePath` (under test/fixtures/). */
export function expectGolden(relativePath: string, actual: string): void {
  const file = join(FIXTURES, relativePath);
  if (process.env.UPDATE_GOLDEN === "1") {
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, actual);
    return;
  }
  let expected: string;
  try {
    expected = readFileSync(file, "utf8");
  } catch {
    throw new Error(`Missing golden file ${file}; run with UPDATE_GOLDEN=1 to write it, then review it.`);
  }
  expect(actual).toBe(expected);
}

/** JSON as the golden files hold it: two-space indent, trailing newline. */
export function goldenJson(value: unknown): string {
  return `${JSON.stringify(value, null, 2)}\n`;
}
