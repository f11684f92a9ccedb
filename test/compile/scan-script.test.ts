import { describe, expect, it } from "vitest";
import { scanScript } from "../../src/compile/index.ts";

describe("scanScript", () => {
  it("estimates how deep brackets and functions nest", () => {
    expect(scanScript("return 1").maxNesting).toBe(0);
    expect(scanScript("const f = a => b => c => 1;").maxNesting).toBe(3);
    expect(scanScript("const f = (a) => { return (b) => { return 1; }; };").maxNesting).toBe(2);
    // An expression body ends at a comma, a semicolon, its bracket, or a line where ASI ends the statement.
    expect(scanScript("const fs = [a => a, b => b, c => c];").maxNesting).toBe(2);
    expect(scanScript("const f = a => a\nconst g = b => b\nconst h = c => c").maxNesting).toBe(1);
    expect(scanScript("xs.map(a => a + 1)\n.map(b => b)\n.map(c => c)").maxNesting).toBe(2);
    // …but not where the expression goes on, or in strings and comments.
    expect(scanScript("const f = a =>\nb =>\nc => 1").maxNesting).toBe(3);
    expect(scanScript('const f = a => ")" + (b => ")" + (c => 1));').maxNesting).toBe(5);
    expect(scanScript("const f = a => /* ; */ b => // ,\n c => 1").maxNesting).toBe(3);
    expect(scanScript("const s = `${`${1}`}`;").maxNesting).toBe(2);
    // A comma inside type arguments ends nothing that the call's bracket does not count.
    expect(scanScript(`const f = ${"x => g<A, B>(".repeat(10)}1${")".repeat(10)};`).maxNesting).toBeGreaterThanOrEqual(10);
    // Strings end at CR or LF only: U+2028 and a backslash + CR LF continue them.
    expect(scanScript('const s = "a\u2028)"; const t = (1);').maxNesting).toBe(1);
    expect(scanScript('const s = "a\\\r\n)"; const t = (1);').maxNesting).toBe(1);
    // A `/` right after a `}` is a guess, said as such.
    expect(scanScript("{} /'/; x").ambiguousSlash).toBe(3);
    expect(scanScript("const o = {}\n/ 2").ambiguousSlash).toBe(13);
    expect(scanScript("const o = {} // note").ambiguousSlash).toBeUndefined();
    const deep = scanScript(`const f = ${"a => ".repeat(300)}1;`);
    expect(deep.maxNesting).toBe(300);
    expect(deep.maxNestingAt).toBe(10 + 299 * 5 + 2);
  });

  it("finds module syntax, import() and require() in code", () => {
    expect(scanScript("a();\nimport x from 'y'").moduleSyntax).toBe(5);
    expect(scanScript("export { a }").moduleSyntax).toBe(0);
    expect(scanScript("await import ( 'x' )").dynamicImport).toBe(6);
    expect(scanScript("f(import.meta)").dynamicImport).toBe(2);
    expect(scanScript("g(); require\n('x')").requireCall).toBe(5);
  });

  it("ignores strings, templates, comments, regexes, properties and methods", () => {
    const scan = scanScript([
      "const a = 'require(1)', b = \"import('x')\";",
      "const c = `import x from 'y' ${'require(2)'} ${`nested import(3)`}`;",
      "// require(4)",
      "/* export const z = 1; import(5) */",
      "const r = /require\\(|import\\(|[/]require(/g;",
      "o.require(6); o?.import(7); o.export;",
      "const m = { require(x) { return x }, import(): number { return 1 }, export: 1 };",
    ].join("\n"));
    expect(scan).toMatchObject({ declaresRequire: false, needsTranspile: false });
    expect(Object.keys(scan).sort()).toEqual(["declaresRequire", "maxNesting", "maxNestingAt", "needsTranspile"]);
  });

  it("reads regexes after keywords, conditions and line-leading braces, division after values", () => {
    expect(scanScript("if (x) /'/.test(s); require(1)").requireCall).toBe(20);
    expect(scanScript("return /'/.source; require(1)").requireCall).toBe(19);
    expect(scanScript("}\n/'/.test(s); require(1)").requireCall).toBe(15);
    // `a! / b / c` is division with TypeScript's non-null assertion: no regex to swallow the call.
    expect(scanScript("const v = a! / b / c; require(1)").requireCall).toBe(22);
    expect(scanScript("const v = (a) / 2 / 'x'; require(1)").requireCall).toBe(25);
  });

  it("notes a script's own require declaration", () => {
    expect(scanScript("function require(x) { return x }\nrequire(1)").declaresRequire).toBe(true);
    expect(scanScript("const require = (x) => x;").declaresRequire).toBe(true);
  });

  it("finds stray closers and unclosed openers, templates included", () => {
    expect(scanScript("a(); }").strayCloser).toBe(5);
    expect(scanScript("f(]").strayCloser).toBe(2);
    expect(scanScript("`${ {a: 1} }` }").strayCloser).toBe(14);
    expect(scanScript("if (a) {\n  f(").unclosedOpener).toBe(12);
    expect(scanScript("const s = '}' + `}` + /}/.source; // }").strayCloser).toBeUndefined();
  });

  it("flags decorators and accessor fields, not an @ in a string", () => {
    expect(scanScript("@d class A {}").needsTranspile).toBe(true);
    expect(scanScript("class A { accessor x = 1 }").needsTranspile).toBe(true);
    expect(scanScript("const accessor = 1; const s = '@'; // @").needsTranspile).toBe(false);
  });
});
