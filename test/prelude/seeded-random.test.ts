import { describe, expect, it } from "vitest";
import { createSeededRandom } from "../../prelude/seeded-random.ts";

describe("createSeededRandom", () => {
  it("repeats for a seed, differs across seeds, and stays in [0, 1)", () => {
    const take = (seed: number): number[] => {
      const next = createSeededRandom(seed);
      return Array.from({ length: 1000 }, () => next());
    };
    expect(take(5)).toEqual(take(5));
    expect(take(5)).not.toEqual(take(6));
    for (const value of take(9)) {
      expect(value).toBeGreaterThanOrEqual(0);
      expect(value).toBeLessThan(1);
    }
  });
});
