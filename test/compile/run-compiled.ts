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

/**
 * Evaluates compiled code the way a driver does, spliced into a call as one expression
 * (`start(<code>)`, see the compiled-script contract), and calls the function it gives.
 */
export async function runCompiled(code: string, globals: Record<string, unknown> = {}, scriptName = "chain.js"): Promise<unknown> {
  const fn: unknown = new vm.Script(`__start(${code}\n)`, { filename: scriptName }).runInNewContext({ ...globals, __start: (value: unknown) => value });
  expect(typeof fn).toBe("function");
  return (fn as () => Promise<unknown>)();
}
