/**
 * The regular-expression engine of argument validation: JSON Schema `pattern` and
 * `patternProperties` run in linear time (RE2's algorithm, through `re2js`), because the text
 * they test comes from a model-written script. V8's backtracking engine takes time exponential in
 * the input for patterns like `^(a+)+$`: 30 characters of argument would hold the host's event
 * loop for minutes, beyond every limit of the chain, since validation is synchronous.
 *
 * JSON Schema patterns are ECMAScript regular expressions (ajv's `u` mode); RE2's syntax differs in
 * a few places, translated here so a pattern matches the same strings on both engines:
 * `\uXXXX` / `\u{X…}` escapes (a surrogate pair of escapes is one code point), `.` (which in
 * ECMAScript also stops at `\r`, U+2028 and U+2029), and `\s` (ECMAScript's Unicode white
 * space). What RE2 cannot express or reads otherwise (lookaround, backreferences, modifier groups,
 * `[:` in a class, `\S` inside a class, `[^]`, `\cX`) and what re2js refuses to compile (long
 * Unicode property names such as `\p{Letter}`, counts over 1 000) keeps V8's engine: such a
 * pattern is the tool author's choice, and the TSDoc of `Tool.inputSchema` says so.
 * @module
 */
import { RE2JS } from "re2js";

/** What ajv calls on a compiled pattern (its `RegExpLike`). */
interface PatternTester {
  test(text: string): boolean;
  toString(): string;
}

/** ECMAScript's `\s`: WhiteSpace and LineTerminator code points, as RE2 class members. */
const ES_SPACE = "\\t\\n\\x{0B}\\f\\r \\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}\\x{FEFF}";

/** ECMAScript's `.` without the `s` flag: anything but a line terminator. */
const ES_DOT = "[^\\n\\r\\x{2028}\\x{2029}]";

/**
 * ajv's `code.regExp`: a linear-time tester for `pattern` (flags `u` or none), or V8's `RegExp`
 * where RE2 cannot express the pattern. Throws, as `new RegExp` does, for a pattern that is not a
 * valid ECMAScript regular expression (ajv then reports the schema as broken).
 */
export function linearRegExp(pattern: string, flags: string): PatternTester {
  // Validity is ECMAScript's: a pattern V8 refuses is a broken schema on either engine.
  const native = new RegExp(pattern, flags);
  const translated = toRe2Syntax(pattern);
  if (translated === undefined) return native;
  let compiled: RE2JS;
  try {
    compiled = RE2JS.compile(translated);
  } catch {
    return native;
  }
  const label = `/${pattern}/${flags} (linear)`;
  return {
    test: (text: string): boolean => compiled.matcher(text).find(),
    toString: (): string => label,
  };
}
// Only for ajv's standalone code generation, which isochain does not use.
linearRegExp.code = "linearRegExp";

/**
 * `pattern` in RE2's syntax with ECMAScript's meaning, or `undefined` when it uses what RE2 has no
 * form for. Escapes RE2 reads the same way pass through unchanged.
 */
export function toRe2Syntax(pattern: string): string | undefined {
  let out = "";
  let inClass = false;
  for (let i = 0; i < pattern.length; i++) {
    const char = pattern[i] as string;
    if (char === "\\") {
      const next = pattern[i + 1];
      if (next === undefined) return undefined;
      if (next === "u") {
        const braced = /^\{([0-9a-fA-F]{1,6})\}/.exec(pattern.slice(i + 2));
        const pair = /^([dD][89abAB][0-9a-fA-F]{2})\\u([dD][c-fC-F][0-9a-fA-F]{2})/.exec(pattern.slice(i + 2));
        const plain = /^[0-9a-fA-F]{4}/.exec(pattern.slice(i + 2));
        if (braced !== null) {
          out += `\\x{${braced[1]}}`;
          i += 1 + braced[0].length;
        } else if (pair !== null) {
          // A surrogate pair written as two escapes is one code point in `u` mode.
          const high = Number.parseInt(pair[1] as string, 16);
          const low = Number.parseInt(pair[2] as string, 16);
          out += `\\x{${(0x10000 + ((high - 0xd800) << 10) + (low - 0xdc00)).toString(16)}}`;
          i += 1 + pair[0].length;
        } else if (plain !== null) {
          out += `\\x{${plain[0]}}`;
          i += 5;
        } else {
          return undefined;
        }
        continue;
      }
      if (next === "s") {
        out += inClass ? ES_SPACE : `[${ES_SPACE}]`;
        i++;
        continue;
      }
      if (next === "S") {
        if (inClass) return undefined;
        out += `[^${ES_SPACE}]`;
        i++;
        continue;
      }
      // Backreferences, \c, \0 and named backreferences have no RE2 form.
      if (/[0-9ck]/.test(next)) return undefined;
      out += char + next;
      i++;
      continue;
    }
    if (inClass) {
      if (char === "]") inClass = false;
      // `[:` starts a POSIX class in RE2 and is two members in ECMAScript.
      if (char === "[" && pattern[i + 1] === ":") return undefined;
      out += char;
      continue;
    }
    if (char === "[") {
      // `[]` and `[^]`: in RE2 that `]` is a member, in ECMAScript it closes an empty class.
      if (pattern[i + 1] === "]" || (pattern[i + 1] === "^" && pattern[i + 2] === "]")) return undefined;
      inClass = true;
      out += char;
      continue;
    }
    if (char === "(" && pattern[i + 1] === "?") {
      const kind = pattern[i + 2] ?? "";
      // Lookaround has no RE2 form; modifier groups ((?i:...), (?s:...), (?-m:...)) mean other
      // things there (RE2's `m` knows only LF as a line end, and `.` is rewritten below).
      if (kind === "=" || kind === "!" || (kind === "<" && (pattern[i + 3] === "=" || pattern[i + 3] === "!"))) return undefined;
      if (kind === "-" || /^[a-zA-Z]$/.test(kind)) return undefined;
    }
    out += char === "." ? ES_DOT : char;
  }
  return out;
}
