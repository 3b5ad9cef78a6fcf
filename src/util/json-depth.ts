/**
 * The deepest nesting of arrays and objects the Service reads from a request body or an Agent
 * message. A filter of the maximal 32 levels takes 64 (`{op, args: [ … ]}`) and each nested Block
 * two (`then: [ {…} ]`), so 100 holds every real Map model; anything deeper is refused before it
 * reaches code that walks it by recursion (validation, key matching, serializers), which would
 * overflow the stack (docs/decisions.md).
 */
export const MAX_JSON_DEPTH = 100;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;

/**
 * True when JSON text nests arrays and objects deeper than `max` levels. Scans the raw text once,
 * without recursion and without parsing, counting brackets outside strings, so it is safe on any
 * input (malformed text included: the parser that runs next reports that). A string is skipped
 * with `indexOf` to its closing quote (one not escaped by an odd run of backslashes): most of an
 * Agent's report is string content, and the native search is several times faster than a loop
 * over its characters.
 */
export function jsonNestsDeeperThan(text: string, max: number = MAX_JSON_DEPTH): boolean {
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      let end = text.indexOf('"', i + 1);
      while (end !== -1 && escaped(text, end)) end = text.indexOf('"', end + 1);
      // An unterminated string: nothing after it nests.
      if (end === -1) return false;
      i = end;
    } else if (c === OPEN_ARRAY || c === OPEN_OBJECT) {
      if (++depth > max) return true;
    } else if (c === CLOSE_ARRAY || c === CLOSE_OBJECT) {
      depth--;
    }
  }
  return false;
}

/** Whether the character at `at` follows an odd run of backslashes (is escaped). */
function escaped(text: string, at: number): boolean {
  let n = 0;
  while (text.charCodeAt(at - n - 1) === BACKSLASH) n++;
  return n % 2 === 1;
}
