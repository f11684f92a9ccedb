import { transformSync } from "esbuild";
import { describe, expect, it } from "vitest";
import { decodeSourceMapMappings } from "../../src/compile/index.ts";
import { isChainRuntimeError } from "../../src/kernel/index.ts";

describe("decodeSourceMapMappings", () => {
  it("decodes segments, relative fields and empty lines", () => {
    expect(decodeSourceMapMappings("AAAA,SAASA;;gBCCF")).toEqual([
      [
        { generatedColumn: 0, sourceIndex: 0, originalLine: 0, originalColumn: 0 },
        { generatedColumn: 9, sourceIndex: 0, originalLine: 0, originalColumn: 9 },
      ],
      [],
      [{ generatedColumn: 16, sourceIndex: 1, originalLine: 1, originalColumn: 7 }],
    ]);
  });

  it("decodes negative deltas and multi-digit numbers", () => {
    // "2H" = 123 ... "D" = -1
    const [line] = decodeSourceMapMappings("AA2HA,CADA");
    expect(line).toEqual([
      { generatedColumn: 0, sourceIndex: 0, originalLine: 123, originalColumn: 0 },
      { generatedColumn: 1, sourceIndex: 0, originalLine: 122, originalColumn: 0 },
    ]);
  });

  it("skips one-field segments", () => {
    expect(decodeSourceMapMappings("E,AAAA")).toEqual([[{ generatedColumn: 2, sourceIndex: 0, originalLine: 0, originalColumn: 0 }]]);
  });

  it.each(["AA!A", "AAA", "AAAg"])("rejects malformed input %s", (input) => {
    let thrown: unknown;
    try {
      decodeSourceMapMappings(input);
    } catch (error) {
      thrown = error;
    }
    expect(isChainRuntimeError(thrown) && thrown.code).toBe("COMPILE_FAILED");
  });

  it("agrees with esbuild: every marker identifier maps to where it was written", () => {
    const lines = Array.from({ length: 40 }, (_, i) => `${" ".repeat(i % 7)}const mk${String(i)}: number = ${String(i)}; // ${"é".repeat(i % 3)}`);
    const source = lines.join("\n");
    const result = transformSync(source, { loader: "ts", sourcemap: "external" });
    const decoded = decodeSourceMapMappings((JSON.parse(result.map) as { mappings: string }).mappings);
    const outLines = result.code.split("\n");
    for (let i = 0; i < 40; i += 1) {
      const generatedLine = outLines.findIndex((text) => text.includes(`mk${String(i)} `));
      const generatedColumn = outLines[generatedLine]?.indexOf(`mk${String(i)}`) ?? -1;
      const segment = decoded[generatedLine]?.find((s) => s.generatedColumn === generatedColumn);
      expect(segment, `mk${String(i)}`).toMatchObject({ originalLine: i, originalColumn: lines[i]?.indexOf(`mk${String(i)}`) });
    }
  });
});
