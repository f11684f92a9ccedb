/**
 * `HOOK_EVENTS`, the runtime list of the `HookEvent` union (as `TOOL_RISKS` is of `ToolRisk`).
 * The invoker and the chain fire them; a hook option is named by one of them.
 */
import { describe, expect, expectTypeOf, it } from "vitest";
import { HOOK_EVENTS, type HookEvent, type HookPayloads, type Hooks, ToolInvoker, Toolbox } from "../../src/index.ts";
import { FAST_POLICY } from "../invoker/invoker-fixtures.ts";

describe("HOOK_EVENTS", () => {
  it("lists every hook event once, frozen, from the public entry", () => {
    expect(HOOK_EVENTS).toEqual(["TOOL_START", "TOOL_END", "CHAIN_START", "CHAIN_END"]);
    expect(Object.isFrozen(HOOK_EVENTS)).toBe(true);
    expect(new Set(HOOK_EVENTS).size).toBe(HOOK_EVENTS.length);
    expectTypeOf<(typeof HOOK_EVENTS)[number]>().toEqualTypeOf<HookEvent>();
    expectTypeOf<keyof HookPayloads>().toEqualTypeOf<HookEvent>();
  });

  it("names hooks an invoker accepts: one function per event", () => {
    const hooks = Object.fromEntries(HOOK_EVENTS.map((event) => [event, () => undefined])) as Hooks;
    expect(() => new ToolInvoker({ toolbox: new Toolbox(), policy: FAST_POLICY, hooks })).not.toThrow();
  });
});
