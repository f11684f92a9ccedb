import { describe, expect, it } from "vitest";
import { type FileHolder, OpenFileBudget } from "../../src/trace/open-file-budget.ts";

/** A holder that gives its slot back when asked to let its file go, and counts the requests. */
function holder(budget: OpenFileBudget): FileHolder & { asked: number } {
  const self = {
    asked: 0,
    letGo(): Promise<void> {
      self.asked++;
      budget.release();
      return Promise.resolve();
    },
  };
  return self;
}

describe("OpenFileBudget", () => {
  it("grants slots at once up to max, then makes the next taker wait for one given back", async () => {
    const budget = new OpenFileBudget(2);
    expect(budget.acquire()).toBeUndefined();
    expect(budget.acquire()).toBeUndefined();
    const waiting = budget.acquire();
    expect(waiting).toBeInstanceOf(Promise);
    let granted = false;
    void waiting?.then(() => (granted = true));
    await Promise.resolve();
    expect(granted).toBe(false);
    budget.release(); // handed over: the count stays at max
    await waiting;
    expect(granted).toBe(true);
    expect(budget.open).toBe(2);
    budget.release();
    budget.release();
    expect(budget.open).toBe(0);
  });

  it("asks the holder idle longest to let its file go when a slot is wanted, and never a busy one", async () => {
    const budget = new OpenFileBudget(2);
    const [a, b] = [holder(budget), holder(budget)];
    budget.acquire();
    budget.acquire();
    budget.idle(a);
    budget.idle(b);
    budget.busy(a); // writing again: not to be asked
    await budget.acquire();
    expect([a.asked, b.asked]).toEqual([0, 1]);
    expect(budget.open).toBe(2);
  });

  it("asks a holder that goes idle while someone waits, one per waiter", async () => {
    const budget = new OpenFileBudget(1);
    const [a, b] = [holder(budget), holder(budget)];
    budget.acquire();
    const first = budget.acquire();
    budget.idle(a);
    await first;
    budget.idle(b); // nobody waits: kept open
    expect([a.asked, b.asked]).toEqual([1, 0]);
  });
});
