import type { InvocationFailure } from "../../kernel/index.ts";
import { invocationFailure } from "../invocation-failure.ts";
import type { SessionState } from "../invoker-session.ts";

/**
 * Gate 1, budget: refuses the call once the session has used `maxToolCalls`; otherwise counts
 * it. Every call that reaches this gate and passes consumes budget, whatever happens to it next
 * (an unknown tool included), so a script cannot probe without limit.
 */
export function checkBudget(state: SessionState): InvocationFailure | undefined {
  const max = state.policy.maxToolCalls;
  if (state.callCount >= max) {
    return invocationFailure(
      "BUDGET_EXCEEDED",
      `Tool-call budget exhausted: ${max} tool call${max === 1 ? " is" : "s are"} allowed here (maxToolCalls), and all were used. ` +
        "Do not call more tools; finish with the results you already have.",
    );
  }
  state.callCount++;
  return undefined;
}
