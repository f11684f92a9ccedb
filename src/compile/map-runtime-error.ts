import type { ChainError } from "../kernel/index.ts";
import { codeFrame } from "./code-frame.ts";
import type { SourcePositionMapper } from "./source-position-mapper.ts";

/** A fault reported by a sandbox, positions still in compiled code (`SandboxError` fits). */
export interface CompiledCodeFault {
  readonly phase: "runtime" | "limit";
  readonly name: string;
  readonly message: string;
  readonly stack?: string;
}

/** What {@link mapRuntimeError} needs besides the fault. */
export interface MapRuntimeErrorOptions {
  /** The model's original script. */
  readonly source: string;
  /** The `map` of the compile result that produced the code that ran. */
  readonly map: SourcePositionMapper;
  /** The file name the driver compiled the code under (`SandboxRunRequest.scriptName`). */
  readonly scriptName: string;
}

/**
 * Turns a sandbox fault into a {@link ChainError} about the original script: the stack is
 * mapped (frames outside the script dropped), and `line`, `column` and `codeFrame` come from
 * its first frame in the script. A fault with no such frame (a limit hit in the prelude)
 * keeps only phase, name, message and the mapped stack.
 */
export function mapRuntimeError(fault: CompiledCodeFault, options: MapRuntimeErrorOptions): ChainError {
  const base = { phase: fault.phase, name: fault.name, message: fault.message };
  if (fault.stack === undefined) return base;
  const stack = options.map.mapStack(fault.stack, options.scriptName);
  const position = options.map.locateError(fault.stack, options.scriptName);
  if (position === undefined) return { ...base, stack };
  return {
    ...base,
    stack,
    line: position.line,
    column: position.column,
    codeFrame: codeFrame(options.source, position.line, position.column),
  };
}
