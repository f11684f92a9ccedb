/**
 * Attack family: code that closes the function the script runs in. The script is the body of
 * an async function; a body whose brackets close that function early would make the rest of the
 * wrapped text run as other expressions, before the prelude starts the script. Such a body is a
 * compile error, and nothing of it runs: no call reaches the host.
 */
import { expect } from "vitest";
import { runAttackTable } from "./attack-table.ts";
import type { Attack } from "./harness.ts";

const EARLY_CLOSE = { status: "error" as const, phase: "compile" as const, name: "SyntaxError", message: /closes its own function early/ };

const attacks: Attack[] = [
  {
    name: "a division read as a regular expression closes the wrapper; the middle calls a tool after the start",
    code:
      "let o = {}\n" +
      '/ 1 }) && (async () => { await null; await null; await tools.spy({ injected: 1 }); })() || (async function () { let z = 1 /\n1\nreturn "never"',
    expected: EARLY_CLOSE,
    check: (result, harness) => {
      expect(result.callTrace).toEqual([]);
      expect(harness.ledger.received.filter((entry) => entry.tool === "spy")).toEqual([]);
    },
  },
  {
    name: "the same with extra arguments to the start",
    code: 'let o = {}\n/ 1 }), (globalThis.PRE = 1), (async function () { let z = 1 /\n1\nreturn 5',
    expected: EARLY_CLOSE,
  },
];

/** No call reached the host. */
const noCall: Attack["check"] = (result, harness) => {
  expect(result.callTrace).toEqual([]);
  expect(harness.ledger.received.filter((entry) => entry.tool === "spy")).toEqual([]);
};

// Other ways the scanner could misread the brackets; whatever it misses, V8's check refuses the
// code, and calls made before that check are held until it passes.
attacks.push(
  {
    name: "a regular expression after a block on the same line; the middle starts itself and calls a tool",
    code:
      '{} /\'/; }), globalThis.__isochain_start(async () => { await tools.spy({ injected: 2 }); return "injected"; }), (async function () {\nreturn "never"',
    expected: EARLY_CLOSE,
    check: noCall,
  },
  {
    // The scanner reads the string whole (U+2028 does not end one), so it sees the stray `}`.
    name: "a U+2028 inside a string literal",
    code:
      'let s = "\u2028"; }), globalThis.__isochain_start(async () => { await tools.spy({ injected: 1 }); return "injected"; }), (async function () { let z = "\u2028";\nreturn "never"',
    expected: { ...EARLY_CLOSE, message: /Unexpected "\}": it matches no "\{" of the script/ },
    check: noCall,
  },
);

runAttackTable("wrapper escape", attacks);
