import { describe, expect, it } from "vitest";
import { parseCommaList, parseFrontMatter } from "../../src/skills/parse-front-matter.ts";

/** The value `parseFrontMatter` reads for `key: <raw>`. */
function valueOf(raw: string): string | undefined {
  return parseFrontMatter(`---\nkey: ${raw}\n---\n`, "f").fields.get("key")?.value;
}

describe("parseFrontMatter comments", () => {
  it.each([
    ["x # y", "x"],
    ["x\t# y", "x"],
    ["# only a comment", ""],
    ["x #", "x"],
    ["a, b # c, d", "a, b"],
    ["C# and F#", "C# and F#"],
    ["issue#42", "issue#42"],
    ["the user's file # note", "the user's file"],
  ])("strips a comment from the unquoted value %j", (raw, value) => {
    expect(valueOf(raw)).toBe(value);
  });

  it.each([
    ['"Fixes issue #42"', "Fixes issue #42"],
    ["'a # b'", "a # b"],
    ['"a # b" # c', "a # b"],
    ["'x' # c", "x"],
    ['"unclosed # quote', '"unclosed # quote'],
    ['"Say "hi" to them"', 'Say "hi" to them'],
  ])("keeps a # inside quotes: %j", (raw, value) => {
    expect(valueOf(raw)).toBe(value);
  });

  it("reads a flow list with a comment after it and a # in a quoted item", () => {
    expect(parseCommaList(valueOf('[a, "b # c"] # note') ?? "")).toEqual(["a", "b # c"]);
    expect(parseCommaList(valueOf("[read_csv, summarize] # the two we need") ?? "")).toEqual(["read_csv", "summarize"]);
    expect(parseCommaList(valueOf("read_csv, summarize # the two we need") ?? "")).toEqual(["read_csv", "summarize"]);
  });
});
