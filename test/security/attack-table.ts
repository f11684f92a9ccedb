/**
 * Registers one family of attacks: for every driver, every row runs on a shared harness and must
 * end with its exact outcome, a whole trace, an untouched host, and a healthy next chain.
 * @module
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type Attack,
  createHarness,
  DRIVERS,
  expectHostUntouched,
  expectOutcome,
  type Harness,
  type HarnessOptions,
} from "./harness.ts";

/** Options of {@link runAttackTable}. */
export interface AttackTableOptions extends HarnessOptions {
  /** Extra checks after each attack, with the result and the harness. */
  readonly after?: (harness: Harness, attack: Attack) => void | Promise<void>;
}

/** Registers `attacks` as one `describe.each(DRIVERS)` block. */
export function runAttackTable(family: string, attacks: readonly Attack[], options: AttackTableOptions = {}): void {
  describe.each(DRIVERS)(`${family} [%s]`, (driver) => {
    let harness: Harness;
    beforeAll(async () => {
      harness = createHarness(driver, options);
      await harness.chain.warm();
    });
    afterAll(async () => {
      await harness.close();
    });

    for (const attack of attacks) {
      // processOnly attacks abort a whole Node process under the in-process driver (see harness).
      const register = attack.processOnly !== undefined && driver === "in-process" ? it.skip : attack.knownBug ? it.fails : it;
      register(attack.name, async () => {
        const target = attack.policy ? createHarness(driver, { ...options, policy: { ...options.policy, ...attack.policy } }) : harness;
        try {
          const result = await target.run(attack.code);
          expectOutcome(result, attack.expected);
          await attack.check?.(result, target);
          target.expectTraceWhole(result);
          expect(target.ledger.violations).toEqual([]);
          expectHostUntouched();
          await options.after?.(target, attack);
          await target.expectHealthy();
        } finally {
          if (target !== harness) await target.close();
        }
      });
    }
  });
}
