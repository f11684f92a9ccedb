import vm from "node:vm";
import { expect } from "vitest";
import { compileScript } from "../../src/compile/index.ts";
import type { CompileOptions, CompileSuccess } from "../../src/compile/index.ts";

/** Compiles and expects success. */
export function compileOk(source: string, options: CompileOptions = {}): CompileSuccess {
  const result = compileScript(source, { cache: false, ...options });
  if (!result.ok) expect.fail(`expected the script to compile: ${JSON.stringify(result.error)}`);
  return result;
}

/** Evaluates compiled code the way a driver does (classic script, completion value) and calls it. */
export async function runCompiled(code: string, globals: Record<string, unknown> = {}, scriptName = "chain.js"): Promise<unknown> {
  const fn: unknown = new vm.Script(code, { filename: scriptName }).runInNewContext({ ...globals });
  expect(typeof fn).toBe("function");
  return (fn as () => Promise<unknown>)();
}
