import type { HookEvent, HookPayloads, Hooks } from "./hooks.ts";

/**
 * Calls `hooks[event]` with `payload` and awaits it. What the hook throws goes to
 * `hooks.onHookError`, and what that throws is dropped: a hook observes, it never breaks a call
 * or a chain. Never throws, never rejects.
 */
export async function fireHook<E extends HookEvent>(hooks: Hooks | undefined, event: E, payload: HookPayloads[E]): Promise<void> {
  const hook = hooks?.[event] as ((payload: HookPayloads[E]) => void | Promise<void>) | undefined;
  if (hook === undefined) return;
  try {
    await hook(payload);
  } catch (error) {
    reportHookError(hooks, error, event);
  }
}

/** Hands `error` to `hooks.onHookError`; a listener that throws is ignored (nothing is left to report to). */
function reportHookError(hooks: Hooks | undefined, error: unknown, event: HookEvent): void {
  try {
    hooks?.onHookError?.(error, event);
  } catch {
    // onHookError itself failed: nothing left to report to.
  }
}
