/**
 * The contract between the compile step and every sandbox driver: what `CompileResult.code` is.
 *
 * - `code` is a classic script (not a module). Evaluated once (isolated-vm
 *   `isolate.compileScript(code, { filename: scriptName })` then `script.run(context)`, or
 *   node:vm), its completion value is an async function of no parameters: the model's script.
 *   Calling it runs the script; the promise it returns settles with the script's `return`
 *   value, or rejects with what it threw.
 * - The body sits between {@link COMPILED_SCRIPT_PREFIX} and {@link COMPILED_SCRIPT_SUFFIX}:
 *   `(async function __chain__() {\n<body>\n})`. The body starts on line 2, so for an output
 *   of the fast path (type stripping) a stack position `scriptName:L:C` is line `L - 1`,
 *   column `C` of the original script; in every case use `CompileResult.map` to translate.
 * - `code` is one expression and then the line {@link COMPILED_SCRIPT_TRAILER}, a comment, so
 *   a driver may splice it into a call that goes on after a line break (`start(<code>\n)`).
 *   When esbuild needs helper declarations for syntax V8 lacks (decorators), they sit inside an
 *   arrow function that returns the wrapped function: `(() => {var __decorate…;\nreturn
 *   (async function __chain__() {…});\n})()`; no line of the body moves.
 * - The function is sloppy-mode (no `"use strict"` added) and is named `__chain__`, the name
 *   that appears in V8 stack frames; the mapper rewrites those frames to the original file.
 * - `code` refers to no host object and no module system: `tools`, `console` and the rest
 *   come from the prelude's globals in the context where it is evaluated.
 * @module
 */

/** Name of the async function that holds the script; it appears in V8 stack frames. */
export const COMPILED_FUNCTION_NAME = "__chain__";

/** Text before the script body in the compiled code (before the TypeScript is removed). */
export const COMPILED_SCRIPT_PREFIX = `(async function ${COMPILED_FUNCTION_NAME}() {\n`;

/** Text after the script body in the compiled code (before the TypeScript is removed). */
export const COMPILED_SCRIPT_SUFFIX = "\n})";

/**
 * The line that ends the compiled code, after the expression: an empty `sourceURL` comment. V8
 * names a script after the last `//# sourceURL=` (or `//@ sourceURL=`) comment in it, whatever
 * file name it was compiled under, and an empty one leaves it that file name. Without this line,
 * a script holding such a comment (`//# sourceURL=report.ts`, kept by the type stripper) would
 * rename itself in every stack frame, and no frame would map back to it.
 */
export const COMPILED_SCRIPT_TRAILER = "\n//# sourceURL=";

/**
 * Lines the prefix adds before the body: original line = generated line - this, on the
 * fast path. Kept as a constant so the mapper and drivers agree.
 */
export const COMPILED_SCRIPT_LINE_OFFSET = 1;

/** Default name under which a driver compiles the code (`SandboxRunRequest.scriptName`). */
export const DEFAULT_SCRIPT_NAME = "chain.js";

/** Default name of the model's original script in mapped stacks (`chain.ts:3:7`). */
export const DEFAULT_SOURCE_NAME = "chain.ts";

/** Wraps a script body the way the compiler does, before types are removed. */
export function wrapScriptBody(body: string): string {
  return `${COMPILED_SCRIPT_PREFIX}${body}${COMPILED_SCRIPT_SUFFIX}`;
}
