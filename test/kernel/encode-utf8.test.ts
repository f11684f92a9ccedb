import { describe, expect, it } from "vitest";
import { encodeUtf8 } from "../../src/kernel/encode-utf8.ts";

const encoder = new TextEncoder();

describe("encodeUtf8", () => {
  it.each([
    ["empty", ""],
    ["ASCII", "hello, world"],
    ["one-byte (Latin-1) text", "café crème, naïve façade ".repeat(200)],
    ["two-byte text", "€ 12, 东京, Ω ".repeat(200)],
    ["astral characters", "🙂👍🏽 𝔘𝔫𝔦𝔠𝔬𝔡𝔢"],
    ["lone surrogates (U+FFFD, as TextEncoder writes them)", "a\ud800b\udc00c\ud83d"],
    ["1 MiB of ASCII (the one-pass path)", "{\"k\":1}".repeat(131_072)],
    ["ASCII at the head, Latin-1 at the end", `${"x".repeat(5000)}é`],
    ["a text whose first bytes fill the one-byte-per-unit buffer exactly, one unit short", `${"x".repeat(5000)}éy`],
    ["ASCII at the head, an astral character at the end", `${"x".repeat(5000)}🙂`],
    ["ASCII at the head, a lone high surrogate at the end", `${"x".repeat(5000)}\ud83d`],
    ["ASCII at the head, two-byte text after it", `${"x".repeat(2000)}${"€".repeat(2000)}`],
    ["a non-ASCII character just past the checked head", `${"x".repeat(1024)}ü${"y".repeat(100)}`],
  ])("writes the same bytes as TextEncoder: %s", (_name, text) => {
    expect(Array.from(encodeUtf8(text))).toEqual(Array.from(encoder.encode(text)));
  });

  it("returns an array that owns its whole buffer, so a store can keep it without a copy", () => {
    // Small texts are where Buffer.from would hand out a view of its shared 8 KiB pool.
    for (const text of ["x", "é".repeat(100), "€".repeat(3000)]) {
      const bytes = encodeUtf8(text);
      expect(bytes).toBeInstanceOf(Uint8Array);
      expect(bytes.byteOffset).toBe(0);
      expect(bytes.byteLength).toBe(bytes.buffer.byteLength);
    }
  });

  it("gives each text its own memory", () => {
    const a = encodeUtf8("aaaa");
    const b = encodeUtf8("bbbb");
    a[0] = 0x7a;
    expect(new TextDecoder().decode(b)).toBe("bbbb");
  });
});
