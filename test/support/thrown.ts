import { type ChainRuntimeError, isChainRuntimeError } from "../../src/kernel/index.ts";

/** The `ChainRuntimeError` `action` throws; anything else it throws is rethrown, and not throwing fails. */
export function thrown(action: () => unknown): ChainRuntimeError {
  try {
    action();
  } catch (error) {
    if (isChainRuntimeError(error)) return error;
    throw error;
  }
  throw new Error("did not throw");
}
