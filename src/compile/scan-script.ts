/**
 * A small tokenizer over the model's original script (TypeScript or JavaScript). It is not a
 * parser: it only knows enough lexical grammar (comments, strings, templates with `${}`
 * nesting, regular expressions, brackets) to find, outside strings and comments:
 *
 * - module syntax (`import x from`, `import {`, `export …`), `import(…)` / `import.meta` and
 *   bare `require(…)` calls, so they can be refused with one clear message;
 * - brackets that close nothing or are never closed, to place errors that esbuild can only
 *   report at the wrapper (an extra `}` that would close the script's function early);
 * - syntax the fast type-stripping path must not pass to V8 as is (decorators, `accessor`).
 *
 * Every finding is a hint the compiler confirms against a real parse (esbuild or Node's
 * type stripper); a hint alone never fails a script. Regular expressions are told from
 * division by the previous token, with `)` of `if`/`while`/`for`/`with` and a `}` followed
 * by a newline allowing a regex, and a `!` after a value read as TypeScript's non-null `!`.
 * @module
 */

/** What {@link scanScript} found; offsets are UTF-16 indices into the scanned text. */
export interface ScriptScan {
  /** First `import …` declaration or `export` keyword. */
  readonly moduleSyntax?: number;
  /** First `import(…)` call or `import.meta`. */
  readonly dynamicImport?: number;
  /** First call of a bare `require(…)` (not `x.require(…)`, not a method definition). */
  readonly requireCall?: number;
  /** The script declares its own `require` (function, class or variable). */
  readonly declaresRequire: boolean;
  /** First `)`, `]` or `}` that closes nothing or the wrong kind of bracket. */
  readonly strayCloser?: number;
  /** Innermost bracket still open at the end. */
  readonly unclosedOpener?: number;
  /** Decorators (`@`) or `accessor` fields: syntax only esbuild may lower for V8. */
  readonly needsTranspile: boolean;
  /**
   * Deepest nesting seen: open brackets of every kind (`{`, `(`, `[`, `${`) plus arrows with an
   * expression body still open around the point (`a => b => c` is 2 deep). An estimate from
   * above: an expression-bodied arrow counts until a `,` or `;` at its level, its enclosing
   * bracket closing, or a line break where automatic semicolon insertion ends the statement.
   * Compilers' time grows faster than linearly with it.
   */
  readonly maxNesting: number;
  /** Where {@link maxNesting} was first reached. */
  readonly maxNestingAt: number;
  /**
   * First `/` right after a `}`: after a block it starts a regular expression, after an object
   * literal or a function expression it is a division; the scanner had to guess.
   */
  readonly ambiguousSlash?: number;
}

/** Tokens that continue an expression after a line break (so no semicolon is inserted before them). */
const CONTINUING_WORDS = new Set(["in", "instanceof", "as", "satisfies", "of"]);

const KEYWORDS_BEFORE_EXPRESSION = new Set([
  "return", "typeof", "instanceof", "in", "of", "new", "delete", "void", "throw", "case", "do", "else",
  "yield", "await", "extends",
]);
const CONDITION_KEYWORDS = new Set(["if", "while", "for", "with"]);
const DECLARATION_KEYWORDS = new Set(["function", "const", "let", "var", "class"]);

/** Previous significant token, as far as regex detection and the checks need it. */
type Previous = "start" | "value" | "operator" | "brace";

const TAG_NONE = 0;
const TAG_CONDITION = 1;
const TAG_REQUIRE = 2;
const TAG_IMPORT = 3;
const TAG_TEMPLATE = 4;

interface Opener {
  readonly char: string;
  readonly at: number;
  readonly tag: number;
  /** For call candidates: offset of the callee. */
  readonly callee: number;
  /** Expression-bodied arrows open at this level (see `ScriptScan.maxNesting`). */
  arrows?: number;
}

/**
 * Scans `text`; linear in its length, never throws. See {@link ScriptScan}. `slashAfterBrace`
 * forces how a `/` right after a `}` is read (by default: a regular expression after a line
 * break, else a division), to scan an ambiguous text both ways.
 */
export function scanScript(text: string, slashAfterBrace?: "regex" | "division"): ScriptScan {
  const length = text.length;
  const stack: Opener[] = [];
  let index = 0;
  let previous = "start" as Previous;
  let previousText = "";
  let newlineSincePrevious = false;
  let pendingTag = TAG_NONE;
  let pendingCallee = -1;

  let moduleSyntax: number | undefined;
  let dynamicImport: number | undefined;
  let requireCall: number | undefined;
  let declaresRequire = false;
  let strayCloser: number | undefined;
  let needsTranspile = false;
  let ambiguousSlash: number | undefined;
  // Nesting (see ScriptScan.maxNesting): arrows open at the top level, arrows in all.
  let rootArrows = 0;
  let openArrows = 0;
  let maxNesting = 0;
  let maxNestingAt = 0;
  const noteNesting = (at: number): void => {
    if (stack.length + openArrows > maxNesting) {
      maxNesting = stack.length + openArrows;
      maxNestingAt = at;
    }
  };
  /** Closes the expression-bodied arrows of the innermost level: its expression ended. */
  const endArrows = (): void => {
    const top = stack[stack.length - 1];
    if (top === undefined) {
      openArrows -= rootArrows;
      rootArrows = 0;
    } else if (top.arrows !== undefined) {
      openArrows -= top.arrows;
      top.arrows = 0;
    }
  };
  /** A token that cannot continue an expression after a line break ends the statement before it. */
  const asiBefore = (continues: boolean): void => {
    if (newlineSincePrevious && !continues && (previous === "value" || previous === "brace")) endArrows();
  };

  const regexAllowed = (): boolean =>
    previous === "start" || previous === "operator" || (previous === "brace" && newlineSincePrevious);

  const setPrevious = (kind: Previous, tokenText: string): void => {
    previous = kind;
    previousText = tokenText;
    newlineSincePrevious = false;
  };

  /** Index of the next character that is not whitespace or comment, from `from`. */
  const nextSignificant = (from: number): number => {
    let at = from;
    while (at < length) {
      const code = text.charCodeAt(at);
      if (isWhitespace(code) || isLineTerminator(code)) {
        at += 1;
      } else if (code === 0x2f && text.charCodeAt(at + 1) === 0x2f) {
        while (at < length && !isLineTerminator(text.charCodeAt(at))) at += 1;
      } else if (code === 0x2f && text.charCodeAt(at + 1) === 0x2a) {
        const end = text.indexOf("*/", at + 2);
        at = end < 0 ? length : end + 2;
      } else {
        return at;
      }
    }
    return length;
  };

  /** Scans template characters from `at` (just after `` ` `` or a closing `}`); returns the index after. */
  const scanTemplate = (from: number): number => {
    let at = from;
    while (at < length) {
      const code = text.charCodeAt(at);
      if (code === 0x5c /* \ */) {
        at += 2;
      } else if (code === 0x60 /* ` */) {
        setPrevious("value", "`");
        return at + 1;
      } else if (code === 0x24 /* $ */ && text.charCodeAt(at + 1) === 0x7b /* { */) {
        stack.push({ char: "{", at: at + 1, tag: TAG_TEMPLATE, callee: -1 });
        noteNesting(at);
        setPrevious("operator", "${");
        return at + 2;
      } else {
        at += 1;
      }
    }
    setPrevious("value", "`");
    return length;
  };

  while (index < length) {
    const code = text.charCodeAt(index);

    if (isLineTerminator(code)) {
      newlineSincePrevious = true;
      index += 1;
      continue;
    }
    if (isWhitespace(code)) {
      index += 1;
      continue;
    }

    // Comments.
    if (code === 0x2f && text.charCodeAt(index + 1) === 0x2f) {
      while (index < length && !isLineTerminator(text.charCodeAt(index))) index += 1;
      continue;
    }
    if (code === 0x2f && text.charCodeAt(index + 1) === 0x2a) {
      const end = text.indexOf("*/", index + 2);
      const stop = end < 0 ? length : end + 2;
      if (/[\n\r\u2028\u2029]/u.test(text.slice(index, stop))) newlineSincePrevious = true;
      index = stop;
      continue;
    }

    const tag = pendingTag;
    const callee = pendingCallee;
    pendingTag = TAG_NONE;
    pendingCallee = -1;

    // Strings.
    if (code === 0x22 || code === 0x27) {
      asiBefore(false);
      index += 1;
      while (index < length) {
        const inner = text.charCodeAt(index);
        if (inner === code) {
          index += 1;
          break;
        }
        // U+2028 and U+2029 are allowed inside string literals (ES2019); only CR and LF end one.
        if (inner === 0x0a || inner === 0x0d) break;
        // An escape; `\` + CR LF is one line continuation.
        if (inner === 0x5c) index += text.charCodeAt(index + 1) === 0x0d && text.charCodeAt(index + 2) === 0x0a ? 3 : 2;
        else index += 1;
      }
      setPrevious("value", "\"");
      continue;
    }

    // Templates.
    if (code === 0x60) {
      index = scanTemplate(index + 1);
      continue;
    }

    // Regular expressions.
    // A `/` right after a `}` is a regular expression after a block and a division after an
    // object literal or a function expression: the scanner guesses, and says it did.
    // (Comments were taken above, so this `/` is an operator or a regular expression.)
    if (code === 0x2f && previous === "brace") ambiguousSlash ??= index;
    if (code === 0x2f && (previous === "brace" && slashAfterBrace !== undefined ? slashAfterBrace === "regex" : regexAllowed())) {
      index += 1;
      let inClass = false;
      while (index < length) {
        const inner = text.charCodeAt(index);
        if (isLineTerminator(inner)) break;
        if (inner === 0x5c) {
          index += 2;
          continue;
        }
        index += 1;
        if (inner === 0x5b) inClass = true;
        else if (inner === 0x5d) inClass = false;
        else if (inner === 0x2f && !inClass) break;
      }
      while (index < length && isIdentifierPart(text.charCodeAt(index))) index += 1;
      setPrevious("value", "/");
      continue;
    }

    // Identifiers and keywords.
    if (isIdentifierStart(code)) {
      const start = index;
      index += 1;
      while (index < length) {
        const inner = text.charCodeAt(index);
        if (inner === 0x5c && text.charCodeAt(index + 1) === 0x75 /* u */) {
          index += text.charCodeAt(index + 2) === 0x7b ? Math.max(3, text.indexOf("}", index) + 1 - index) : 6;
        } else if (isIdentifierPart(inner)) {
          index += 1;
        } else {
          break;
        }
      }
      const word = text.slice(start, index);
      asiBefore(CONTINUING_WORDS.has(word));
      const afterDot = previousText === "." || previousText === "?.";
      if (!afterDot) {
        if (word === "import") {
          const next = nextSignificant(index);
          const nextCode = text.charCodeAt(next);
          if (nextCode === 0x28 /* ( */) {
            pendingTag = TAG_IMPORT;
            pendingCallee = start;
          } else if (nextCode === 0x2e /* . */ && text.startsWith("meta", nextSignificant(next + 1))) {
            dynamicImport ??= start;
          } else if (
            nextCode === 0x7b || nextCode === 0x2a || nextCode === 0x22 || nextCode === 0x27 ||
            (isIdentifierStart(nextCode) && !text.startsWith("in", next) && !text.startsWith("instanceof", next))
          ) {
            moduleSyntax ??= start;
          }
        } else if (word === "export") {
          const nextCode = text.charCodeAt(nextSignificant(index));
          if (nextCode !== 0x3a && nextCode !== 0x28 && nextCode !== 0x2c && nextCode !== 0x7d && nextCode !== 0x3d &&
            nextCode !== 0x3f && nextCode !== 0x3b && nextCode !== 0x29) {
            moduleSyntax ??= start;
          }
        } else if (word === "require") {
          if (DECLARATION_KEYWORDS.has(previousText)) {
            declaresRequire = true;
          } else if (text.charCodeAt(nextSignificant(index)) === 0x28) {
            pendingTag = TAG_REQUIRE;
            pendingCallee = start;
          }
        } else if (word === "accessor" && (previous === "operator" || previous === "brace" || newlineSincePrevious || previousText === "static")) {
          const nextCode = text.charCodeAt(nextSignificant(index));
          if (isIdentifierStart(nextCode) || nextCode === 0x23 || nextCode === 0x5b) needsTranspile = true;
        }
      }
      if (CONDITION_KEYWORDS.has(word) && !afterDot) {
        pendingTag = TAG_CONDITION;
      }
      setPrevious(KEYWORDS_BEFORE_EXPRESSION.has(word) && !afterDot ? "operator" : "value", afterDot ? "name" : word);
      continue;
    }

    // Numbers.
    if (isDigit(code) || (code === 0x2e && isDigit(text.charCodeAt(index + 1)))) {
      asiBefore(false);
      const hex = code === 0x30 && /[xXoObB]/u.test(text[index + 1] ?? "");
      index += 1;
      while (index < length) {
        const inner = text.charCodeAt(index);
        if (isIdentifierPart(inner) || inner === 0x2e) {
          index += 1;
        } else if ((inner === 0x2b || inner === 0x2d) && !hex && /[eE]/u.test(text[index - 1] ?? "")) {
          index += 1;
        } else {
          break;
        }
      }
      setPrevious("value", "0");
      continue;
    }

    // Brackets.
    if (code === 0x28 || code === 0x5b || code === 0x7b) {
      const char = text[index] ?? "";
      stack.push({ char, at: index, tag: code === 0x28 ? tag : TAG_NONE, callee: code === 0x28 ? callee : -1 });
      noteNesting(index);
      setPrevious("operator", char);
      index += 1;
      continue;
    }
    if (code === 0x29 || code === 0x5d || code === 0x7d) {
      const char = text[index] ?? "";
      const top = stack[stack.length - 1];
      const expected = char === ")" ? "(" : char === "]" ? "[" : "{";
      if (top === undefined || top.char !== expected) {
        strayCloser ??= index;
        setPrevious(char === "}" ? "brace" : "value", char);
        index += 1;
        continue;
      }
      stack.pop();
      openArrows -= top.arrows ?? 0;
      index += 1;
      if (top.tag === TAG_TEMPLATE) {
        index = scanTemplate(index);
        continue;
      }
      if (top.tag === TAG_REQUIRE || top.tag === TAG_IMPORT) {
        // `require(x) {` / `import(): T {` are method definitions, not calls.
        const nextCode = text.charCodeAt(nextSignificant(index));
        if (nextCode !== 0x7b && nextCode !== 0x3a) {
          if (top.tag === TAG_REQUIRE) requireCall ??= top.callee;
          else dynamicImport ??= top.callee;
        }
      }
      if (char === ")") setPrevious(top.tag === TAG_CONDITION ? "operator" : "value", ")");
      else if (char === "]") setPrevious("value", "]");
      else setPrevious("brace", "}");
      continue;
    }

    // Punctuators.
    if (code === 0x40 /* @ */) needsTranspile = true;
    if (code === 0x21 /* ! */ && previous === "value" && text.charCodeAt(index + 1) !== 0x3d) {
      index += 1; // TypeScript's non-null assertion: the value goes on.
      previousText = "!";
      continue;
    }
    const next = text.charCodeAt(index + 1);
    if (code === 0x3d && next === 0x3e) {
      // `=>`: an expression body stays open around what follows (a block body is a `{`).
      if (text.charCodeAt(nextSignificant(index + 2)) !== 0x7b) {
        const top = stack[stack.length - 1];
        if (top === undefined) rootArrows++;
        else top.arrows = (top.arrows ?? 0) + 1;
        openArrows++;
        noteNesting(index);
      }
      setPrevious("operator", "=>");
      index += 2;
      continue;
    }
    if (code === 0x2c || code === 0x3b) endArrows();
    if (code === 0x2e && next === 0x2e && text.charCodeAt(index + 2) === 0x2e) {
      setPrevious("operator", "...");
      index += 3;
    } else if (code === 0x3f && next === 0x2e && !isDigit(text.charCodeAt(index + 2))) {
      setPrevious("operator", "?.");
      index += 2;
    } else if ((code === 0x2b || code === 0x2d) && next === code) {
      // Postfix after a value keeps it a value; prefix is an operator.
      setPrevious(previous === "value" ? "value" : "operator", code === 0x2b ? "++" : "--");
      index += 2;
    } else {
      setPrevious("operator", code === 0x2e ? "." : "");
      index += 1;
    }
  }

  const open = stack[stack.length - 1];
  return {
    ...(moduleSyntax === undefined ? {} : { moduleSyntax }),
    ...(dynamicImport === undefined ? {} : { dynamicImport }),
    ...(requireCall === undefined ? {} : { requireCall }),
    declaresRequire,
    ...(strayCloser === undefined ? {} : { strayCloser }),
    ...(open === undefined ? {} : { unclosedOpener: open.at }),
    ...(ambiguousSlash === undefined ? {} : { ambiguousSlash }),
    needsTranspile,
    maxNesting,
    maxNestingAt,
  };
}

function isLineTerminator(code: number): boolean {
  return code === 0x0a || code === 0x0d || code === 0x2028 || code === 0x2029;
}

function isWhitespace(code: number): boolean {
  return code === 0x20 || code === 0x09 || code === 0x0b || code === 0x0c || code === 0xa0 || code === 0xfeff ||
    (code >= 0x1680 && (code === 0x1680 || (code >= 0x2000 && code <= 0x200a) || code === 0x202f || code === 0x205f || code === 0x3000));
}

function isDigit(code: number): boolean {
  return code >= 0x30 && code <= 0x39;
}

function isIdentifierStart(code: number): boolean {
  return (code >= 0x61 && code <= 0x7a) || (code >= 0x41 && code <= 0x5a) || code === 0x24 || code === 0x5f ||
    code === 0x5c || code === 0x23 || (code > 0x7f && !isWhitespace(code) && !isLineTerminator(code));
}

function isIdentifierPart(code: number): boolean {
  return isIdentifierStart(code) || isDigit(code);
}
