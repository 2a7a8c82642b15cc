/**
 * Splits a migration file into its statements. `@effect/sql-pg` speaks only the extended query
 * protocol, which takes one statement per call, so a file is run statement by statement inside
 * one transaction. The lexer knows what can hide a `;`: quoted strings (with `''`), escape
 * strings (`E'..\'..'`), quoted identifiers, line and (nested) block comments, and dollar quotes.
 */

const isIdentStart = (c: string) => /[A-Za-z_\u0080-\uffff]/.test(c)
const isIdentPart = (c: string) => /[A-Za-z0-9_\u0080-\uffff]/.test(c)

export const splitSqlStatements = (text: string): Array<string> => {
  const statements: Array<string> = []
  let start = 0
  let i = 0
  const n = text.length

  const push = (end: number) => {
    const statement = text.slice(start, end).trim()
    if (hasCode(statement)) statements.push(statement)
    start = end + 1
  }

  while (i < n) {
    const c = text[i] as string
    const next = text[i + 1]
    if (c === "-" && next === "-") {
      const eol = text.indexOf("\n", i)
      i = eol === -1 ? n : eol + 1
    } else if (c === "/" && next === "*") {
      i = skipBlockComment(text, i)
    } else if (c === "'") {
      const escapes = i > 0 && /[eE]/.test(text[i - 1] as string) && (i < 2 || !isIdentPart(text[i - 2] as string))
      i = skipQuoted(text, i, "'", escapes)
    } else if (c === '"') {
      i = skipQuoted(text, i, '"', false)
    } else if (c === "$" && (i === 0 || !isIdentPart(text[i - 1] as string))) {
      const tag = dollarTag(text, i)
      if (tag === undefined) {
        i++
      } else {
        const close = text.indexOf(tag, i + tag.length)
        i = close === -1 ? n : close + tag.length
      }
    } else if (c === ";") {
      push(i)
      i++
    } else {
      i++
    }
  }
  push(n)
  return statements
}

/** `$tag$` or `$$` starting at `i`, or undefined when `$` starts something else (e.g. `$1`). */
const dollarTag = (text: string, i: number): string | undefined => {
  let j = i + 1
  if (text[j] === "$") return "$$"
  if (!isIdentStart(text[j] ?? "")) return undefined
  while (j < text.length && isIdentPart(text[j] as string)) j++
  return text[j] === "$" ? text.slice(i, j + 1) : undefined
}

const skipQuoted = (text: string, i: number, quote: string, backslashEscapes: boolean): number => {
  let j = i + 1
  while (j < text.length) {
    const c = text[j]
    if (backslashEscapes && c === "\\") {
      j += 2
    } else if (c === quote) {
      if (text[j + 1] === quote) j += 2
      else return j + 1
    } else {
      j++
    }
  }
  return j
}

const skipBlockComment = (text: string, i: number): number => {
  let depth = 0
  let j = i
  while (j < text.length) {
    if (text[j] === "/" && text[j + 1] === "*") {
      depth++
      j += 2
    } else if (text[j] === "*" && text[j + 1] === "/") {
      depth--
      j += 2
      if (depth === 0) return j
    } else {
      j++
    }
  }
  return j
}

/** True when the text holds something other than whitespace and comments. */
const hasCode = (statement: string): boolean => {
  let i = 0
  while (i < statement.length) {
    const c = statement[i] as string
    if (/\s/.test(c)) i++
    else if (c === "-" && statement[i + 1] === "-") {
      const eol = statement.indexOf("\n", i)
      i = eol === -1 ? statement.length : eol + 1
    } else if (c === "/" && statement[i + 1] === "*") i = skipBlockComment(statement, i)
    else return true
  }
  return false
}
