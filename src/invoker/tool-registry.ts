import type { AnyTool } from "../kernel/index.ts";

/**
 * What the invoker needs of a registry: look a tool up by name, and list names for the
 * "did you mean" hint of an unknown tool. `Toolbox` satisfies it; so does a small test double.
 */
export interface ToolRegistry {
  get(name: string): AnyTool | undefined;
  names(): Iterable<string>;
}
