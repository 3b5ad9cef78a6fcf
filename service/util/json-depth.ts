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
 * input (malformed text included: the parser that runs next reports that).
 */
export function jsonNestsDeeperThan(text: string, max: number = MAX_JSON_DEPTH): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === BACKSLASH) i++;
      else if (c === QUOTE) inString = false;
    } else if (c === QUOTE) {
      inString = true;
    } else if (c === OPEN_ARRAY || c === OPEN_OBJECT) {
      if (++depth > max) return true;
    } else if (c === CLOSE_ARRAY || c === CLOSE_OBJECT) {
      depth--;
    }
  }
  return false;
}
