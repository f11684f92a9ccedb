/**
 * How dangerous a tool is. Ordered `safe < high < critical`.
 *
 * - `safe`: no side effects; runs freely.
 * - `high`: an external side effect (an email, a database write); needs approval when it is
 *   above the policy's `maxRiskUnapproved` line.
 * - `critical`: destructive or irreversible; always needs approval, whatever the policy says.
 */
export type ToolRisk = "safe" | "high" | "critical";

/** Every risk level, lowest first. */
export const TOOL_RISKS: readonly ToolRisk[] = Object.freeze(["safe", "high", "critical"]);

const RANK: Readonly<Record<ToolRisk, number>> = Object.freeze({ safe: 0, high: 1, critical: 2 });

/** Numeric rank of a risk level (`safe` = 0). */
export function riskRank(risk: ToolRisk): number {
  return RANK[risk];
}

/** True when `value` is one of the three risk levels. */
export function isToolRisk(value: unknown): value is ToolRisk {
  return value === "safe" || value === "high" || value === "critical";
}

/**
 * Whether a call of a tool with `risk` needs a human's approval under `maxRiskUnapproved`.
 * `critical` always does; anything above the line does.
 */
export function requiresApproval(risk: ToolRisk, maxRiskUnapproved: ToolRisk): boolean {
  return risk === "critical" || RANK[risk] > RANK[maxRiskUnapproved];
}
