/**
 * The catalogue of Ferry's Map formula language: every function a formula may call, with its
 * category, signature, meaning and worked examples. It is the one list the Map engine implements,
 * the formula validator checks names and argument counts against, `GET /v1/orgs/{orgId}/Functions`
 * publishes and `docs/formulas.md` documents. The examples double as the engine's conformance
 * tests, so they must stay exact.
 *
 * This module runs inside the formula sandbox too: it imports nothing, from Node or elsewhere.
 *
 * Conventions the descriptions rely on (see docs/formulas.md):
 * - Names are case-insensitive. Text positions are 1-based. Text comparisons are case-sensitive
 *   unless a description says otherwise.
 * - null stands for "no value". Where a function expects text, null counts as empty text; where it
 *   expects a number, as 0; where it expects a boolean, as false. Date functions return null for a
 *   null date. Descriptions name every exception (TOSTRING, COALESCE, the IS… tests, aggregates).
 * - Text is converted to a number where a number is expected (`"2" + "1"` is 3) and anything to
 *   text where text is expected (`2 & 1` is "21"); text that is not a number fails the record.
 * - Dates are instants in UTC. Where a date is expected, text in ISO-8601 (`2024-03-05`,
 *   `2024-03-05T14:07:09Z`, `2024-03-05 14:07`, with or without an offset; no zone means UTC) is
 *   accepted. Example results show dates as ISO-8601 UTC text with milliseconds.
 * - Example formulas may read fields and Lookup Tables given in `given`.
 */

/** The categories of SPEC.md's Function model, in display order. */
export const FUNCTION_CATEGORIES = ['Data Conversion', 'DateTime', 'Lookup', 'Math', 'Miscellaneous', 'Text'] as const;
export type FunctionCategory = (typeof FUNCTION_CATEGORIES)[number];

/** What a function returns. `Any` follows its arguments (IF, COALESCE, …). */
export type FormulaType = 'Text' | 'Integer' | 'Decimal' | 'Boolean' | 'DateTime' | 'Any';

export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

/** Fields and Lookup Tables an example formula reads. */
export interface ExampleContext {
  /** Field values by reference, e.g. `{"Query_Account.Name": "Acme"}`. */
  readonly fields?: Readonly<Record<string, JsonValue>>;
  /** Lookup Tables by name: their (value1, value2) pairs in order. */
  readonly lookupTables?: Readonly<Record<string, ReadonlyArray<readonly [string, string]>>>;
}

/** A formula and the JSON value it evaluates to. */
export interface FormulaExample {
  readonly formula: string;
  readonly result: JsonValue;
  readonly given?: ExampleContext;
}

/** How many arguments a function takes; `max` null = any number from `min` up. */
export interface Arity {
  readonly min: number;
  readonly max: number | null;
}

/** One catalogue entry as written below. */
export interface FunctionSpec {
  readonly name: string;
  readonly category: FunctionCategory;
  /** `NAME(param, [optional], [more, ...])`. */
  readonly signature: string;
  readonly description: string;
  readonly returns: FormulaType;
  readonly examples: readonly FormulaExample[];
}

/** A catalogue entry with its stable identity and arity. */
export interface FormulaFunction extends FunctionSpec {
  /** A GUID derived from the name: stable across releases and replicas. */
  readonly id: string;
  readonly lastModificationDate: string;
  readonly arity: Arity;
}

/** When the catalogue last changed; bump it with any change to an entry. */
export const CATALOGUE_LAST_MODIFIED = '2026-11-21T00:00:00.000Z';

const ex = (formula: string, result: JsonValue, given?: ExampleContext): FormulaExample =>
  given ? { formula, result, given } : { formula, result };

const STATES: ExampleContext = {
  lookupTables: {
    States: [
      ['California', 'CA'],
      ['Texas', 'TX'],
      ['Nevada', 'NV'],
    ],
  },
};
/** How the Lookup functions find a table and choose among duplicate pairs (src/maps/lookup/lookup-set.ts). */
const LOOKUP_RULES =
  "tableName is the table's name in any case, or its id. When several pairs match, the answer is the other value that comes first in code-point order, so a run answers as the REST API does. A table that does not exist fails the record (MAP_LOOKUP_TABLE_NOT_FOUND).";
const DATE_PARTS =
  'year (yyyy, yy), quarter (qq, q), month (mm, m), week (wk, ww), day (dd, d), hour (hh), minute (mi, n), second (ss, s) and millisecond (ms), in any case';

// A table to read down: one entry per function, its name, category, return type and signature on
// the entry's first line. Formatted, each would spread over eight lines or more.
// prettier-ignore
const SPECS: readonly FunctionSpec[] = [
  // ── Text ──────────────────────────────────────────────────────────────────────────────────
  { name: 'CONCATENATE', category: 'Text', returns: 'Text', signature: 'CONCATENATE(text1, [text2, ...])',
    description: 'Joins its arguments into one text. Numbers are written as TOSTRING writes them, dates as ISO-8601 UTC text, booleans as true or false, and null as empty text. The & operator joins two values the same way.',
    examples: [ex('CONCATENATE("Ferry", " ", "Data")', 'Ferry Data'), ex('CONCATENATE("a", null, 1.5)', 'a1.5'), ex('"A-" & 2 & 1', 'A-21'),
      ex('CONCATENATE(Query_Account.Name, " (", Query_Account.City, ")")', 'Acme (Oslo)', { fields: { 'Query_Account.Name': 'Acme', 'Query_Account.City': 'Oslo' } })] },
  { name: 'LEFT', category: 'Text', returns: 'Text', signature: 'LEFT(text, count)',
    description: 'The first count characters of text, or all of it when it is shorter. count must not be negative.',
    examples: [ex('LEFT("Ferry", 2)', 'Fe'), ex('LEFT("Ferry", 10)', 'Ferry'), ex('LEFT(null, 3)', '')] },
  { name: 'RIGHT', category: 'Text', returns: 'Text', signature: 'RIGHT(text, count)',
    description: 'The last count characters of text, or all of it when it is shorter. count must not be negative.',
    examples: [ex('RIGHT("Ferry", 3)', 'rry'), ex('RIGHT(12345, 2)', '45')] },
  { name: 'MID', category: 'Text', returns: 'Text', signature: 'MID(text, start, count)',
    description: 'count characters of text beginning at position start (1 is the first character). Empty text when start lies past the end; fewer characters when the text ends first.',
    examples: [ex('MID("Ferry data", 7, 4)', 'data'), ex('MID("abc", 5, 2)', ''), ex('MID("abcdef", 4, 10)', 'def')] },
  { name: 'LEN', category: 'Text', returns: 'Integer', signature: 'LEN(text)',
    description: 'The number of characters in text; 0 for null or empty text. A number counts the characters TOSTRING writes for it.',
    examples: [ex('LEN("Ferry")', 5), ex('LEN(null)', 0), ex('LEN(2024)', 4)] },
  { name: 'UPPER', category: 'Text', returns: 'Text', signature: 'UPPER(text)',
    description: 'text with every letter in upper case.',
    examples: [ex('UPPER("Ferry 2")', 'FERRY 2')] },
  { name: 'LOWER', category: 'Text', returns: 'Text', signature: 'LOWER(text)',
    description: 'text with every letter in lower case.',
    examples: [ex('LOWER("FeRRy")', 'ferry')] },
  { name: 'PROPER', category: 'Text', returns: 'Text', signature: 'PROPER(text)',
    description: 'text with the first letter of each word in upper case and the other letters in lower case. A word begins after any character that is not a letter.',
    examples: [ex('PROPER("hello wORLD")', 'Hello World'), ex('PROPER("o\'neil-smith")', "O'Neil-Smith")] },
  { name: 'TRIM', category: 'Text', returns: 'Text', signature: 'TRIM(text)',
    description: 'text without leading and trailing whitespace (spaces, tabs, line breaks). Whitespace between words is kept; REGEXREPLACE collapses it.',
    examples: [ex('TRIM("  Ferry  ")', 'Ferry'), ex('TRIM("  a  b ")', 'a  b')] },
  { name: 'TRIMLEFT', category: 'Text', returns: 'Text', signature: 'TRIMLEFT(text)',
    description: 'text without leading whitespace.',
    examples: [ex('TRIMLEFT("  Ferry  ")', 'Ferry  ')] },
  { name: 'TRIMRIGHT', category: 'Text', returns: 'Text', signature: 'TRIMRIGHT(text)',
    description: 'text without trailing whitespace.',
    examples: [ex('TRIMRIGHT("  Ferry  ")', '  Ferry')] },
  { name: 'REPLACE', category: 'Text', returns: 'Text', signature: 'REPLACE(text, start, count, newText)',
    description: 'text with the count characters beginning at position start replaced by newText. count 0 inserts newText before position start.',
    examples: [ex('REPLACE("abcdef", 3, 2, "XY")', 'abXYef'), ex('REPLACE("2024-01", 5, 1, "/")', '2024/01'), ex('REPLACE("abc", 2, 0, "-")', 'a-bc')] },
  { name: 'SUBSTITUTE', category: 'Text', returns: 'Text', signature: 'SUBSTITUTE(text, oldText, newText, [instance])',
    description: 'text with occurrences of oldText (case-sensitive) replaced by newText: every occurrence, or only the instance-th one when instance is given. text is returned unchanged when oldText does not occur.',
    examples: [ex('SUBSTITUTE("a-b-c", "-", "+")', 'a+b+c'), ex('SUBSTITUTE("a-b-c", "-", "+", 2)', 'a-b+c'), ex('SUBSTITUTE("Ferry", "x", "y")', 'Ferry')] },
  { name: 'FIND', category: 'Text', returns: 'Integer', signature: 'FIND(findText, withinText, [start])',
    description: 'The position of the first occurrence of findText in withinText at or after position start (default 1), case-sensitive; 0 when there is none.',
    examples: [ex('FIND("r", "Ferry")', 3), ex('FIND("r", "Ferry", 4)', 4), ex('FIND("R", "Ferry")', 0)] },
  { name: 'SEARCH', category: 'Text', returns: 'Integer', signature: 'SEARCH(findText, withinText, [start])',
    description: 'Like FIND but ignores case: the position of the first occurrence of findText in withinText at or after start (default 1); 0 when there is none.',
    examples: [ex('SEARCH("R", "Ferry")', 3), ex('SEARCH("DATA", "Ferry data")', 7)] },
  { name: 'FINDLAST', category: 'Text', returns: 'Integer', signature: 'FINDLAST(findText, withinText)',
    description: 'The position of the last occurrence of findText in withinText, case-sensitive; 0 when there is none.',
    examples: [ex('FINDLAST("-", "a-b-c")', 4), ex('FINDLAST("x", "a-b-c")', 0)] },
  { name: 'PADLEFT', category: 'Text', returns: 'Text', signature: 'PADLEFT(text, length, [padChar])',
    description: 'text extended on the left with padChar (default a space) to length characters. Longer text is returned unchanged, never cut.',
    examples: [ex('PADLEFT("42", 5, "0")', '00042'), ex('PADLEFT("7", 3)', '  7'), ex('PADLEFT("Ferry", 3)', 'Ferry')] },
  { name: 'PADRIGHT', category: 'Text', returns: 'Text', signature: 'PADRIGHT(text, length, [padChar])',
    description: 'text extended on the right with padChar (default a space) to length characters. Longer text is returned unchanged, never cut.',
    examples: [ex('PADRIGHT("ab", 4, ".")', 'ab..'), ex('PADRIGHT("ab", 1)', 'ab')] },
  { name: 'FORMAT', category: 'Text', returns: 'Text', signature: 'FORMAT(number, format)',
    description: 'number written with a numeric format: 0 is a digit always shown, # a digit shown when significant, . the decimal point, , (between digit places) groups thousands, % multiplies by 100 and shows a percent sign; other characters are copied. The last shown digit is rounded half away from zero.',
    examples: [ex('FORMAT(1234.5, "#,##0.00")', '1,234.50'), ex('FORMAT(7, "000")', '007'), ex('FORMAT(0.256, "0.0%")', '25.6%'), ex('FORMAT(-1234.567, "#,##0.0")', '-1,234.6')] },
  { name: 'STARTSWITH', category: 'Text', returns: 'Boolean', signature: 'STARTSWITH(text, prefix)',
    description: 'true when text begins with prefix, case-sensitive.',
    examples: [ex('STARTSWITH("Ferry", "Fe")', true), ex('STARTSWITH("Ferry", "fe")', false)] },
  { name: 'ENDSWITH', category: 'Text', returns: 'Boolean', signature: 'ENDSWITH(text, suffix)',
    description: 'true when text ends with suffix, case-sensitive.',
    examples: [ex('ENDSWITH("report.csv", ".csv")', true), ex('ENDSWITH("report.csv", ".txt")', false)] },
  { name: 'CONTAINS', category: 'Text', returns: 'Boolean', signature: 'CONTAINS(text, part)',
    description: 'true when part occurs in text, case-sensitive.',
    examples: [ex('CONTAINS("Ferry data", "data")', true), ex('CONTAINS("Ferry", "boat")', false)] },
  { name: 'REVERSE', category: 'Text', returns: 'Text', signature: 'REVERSE(text)',
    description: 'The characters of text in reverse order.',
    examples: [ex('REVERSE("Ferry")', 'yrreF')] },
  { name: 'REPEAT', category: 'Text', returns: 'Text', signature: 'REPEAT(text, count)',
    description: 'text repeated count times; empty text for count 0. count must not be negative.',
    examples: [ex('REPEAT("ab", 3)', 'ababab'), ex('REPEAT("x", 0)', '')] },
  { name: 'STRIPCHARS', category: 'Text', returns: 'Text', signature: 'STRIPCHARS(text, chars)',
    description: 'text with every character that appears in chars removed.',
    examples: [ex('STRIPCHARS("(555) 123-4567", "()- ")', '5551234567')] },
  { name: 'EXACT', category: 'Text', returns: 'Boolean', signature: 'EXACT(text1, text2)',
    description: 'true when the two texts are the same, character for character and case for case.',
    examples: [ex('EXACT("Ferry", "Ferry")', true), ex('EXACT("Ferry", "ferry")', false)] },
  { name: 'CHAR', category: 'Text', returns: 'Text', signature: 'CHAR(code)',
    description: 'The character with the Unicode code point code.',
    examples: [ex('CHAR(65)', 'A'), ex('CHAR(233)', 'é')] },
  { name: 'CODE', category: 'Text', returns: 'Integer', signature: 'CODE(text)',
    description: 'The Unicode code point of the first character of text. Empty text fails the record.',
    examples: [ex('CODE("A")', 65), ex('CODE("é")', 233)] },
  { name: 'CLEAN', category: 'Text', returns: 'Text', signature: 'CLEAN(text)',
    description: 'text without control characters (code points 0 to 31 and 127), such as tabs and line breaks.',
    examples: [ex('CLEAN("a" & CHAR(9) & "b" & CHAR(10))', 'ab')] },
  { name: 'TEXTJOIN', category: 'Text', returns: 'Text', signature: 'TEXTJOIN(delimiter, ignoreEmpty, text1, [text2, ...])',
    description: 'Joins the texts with delimiter between them. When ignoreEmpty is true, null and empty texts are left out; otherwise they count as empty text.',
    examples: [ex('TEXTJOIN(", ", true, "a", null, "", "b")', 'a, b'), ex('TEXTJOIN("-", false, "a", null, "b")', 'a--b')] },
  { name: 'SPLITPART', category: 'Text', returns: 'Text', signature: 'SPLITPART(text, delimiter, index)',
    description: 'The index-th piece of text split at each delimiter (1 is the first piece; -1 the last). Empty text when there are fewer pieces.',
    examples: [ex('SPLITPART("a,b,c", ",", 2)', 'b'), ex('SPLITPART("a,b,c", ",", -1)', 'c'), ex('SPLITPART("a,b", ",", 5)', '')] },
  { name: 'REGEXMATCH', category: 'Text', returns: 'Boolean', signature: 'REGEXMATCH(text, pattern)',
    description: 'true when the regular expression pattern (JavaScript syntax) matches somewhere in text. Anchor it with ^ and $ to match the whole text.',
    examples: [ex('REGEXMATCH("AB-1234", "^[A-Z]{2}-[0-9]{4}$")', true), ex('REGEXMATCH("ab-1234", "^[A-Z]{2}-")', false)] },
  { name: 'REGEXREPLACE', category: 'Text', returns: 'Text', signature: 'REGEXREPLACE(text, pattern, replacement)',
    description: 'text with every match of the regular expression pattern replaced by replacement, in which $1, $2, … stand for the captured groups.',
    examples: [ex('REGEXREPLACE("a1b22c333", "[0-9]+", "#")', 'a#b#c#'), ex('REGEXREPLACE("2024-03-05", "([0-9]+)-([0-9]+)-([0-9]+)", "$3.$2.$1")', '05.03.2024')] },
  { name: 'REGEXEXTRACT', category: 'Text', returns: 'Text', signature: 'REGEXEXTRACT(text, pattern, [group])',
    description: 'The first match of the regular expression pattern in text, or of its group-th captured group; null when it does not match.',
    examples: [ex('REGEXEXTRACT("Order 4711 shipped", "[0-9]+")', '4711'), ex('REGEXEXTRACT("id=42;", "id=([0-9]+)", 1)', '42'), ex('REGEXEXTRACT("no digits", "[0-9]+")', null)] },
  { name: 'URLENCODE', category: 'Text', returns: 'Text', signature: 'URLENCODE(text)',
    description: 'text percent-encoded for use as one part of a URL (UTF-8; letters, digits and - _ . ! ~ * \' ( ) are kept).',
    examples: [ex('URLENCODE("a b&c=d")', 'a%20b%26c%3Dd')] },
  { name: 'URLDECODE', category: 'Text', returns: 'Text', signature: 'URLDECODE(text)',
    description: 'text with percent-encoded UTF-8 sequences decoded; + is left as it is. A malformed sequence fails the record.',
    examples: [ex('URLDECODE("a%20b%26c")', 'a b&c')] },
  { name: 'HTMLENCODE', category: 'Text', returns: 'Text', signature: 'HTMLENCODE(text)',
    description: 'text with the characters that are special in HTML (& < > " \') written as entities.',
    examples: [ex('HTMLENCODE("<b>Fish & Chips</b>")', '&lt;b&gt;Fish &amp; Chips&lt;/b&gt;')] },

  // ── DateTime ──────────────────────────────────────────────────────────────────────────────
  { name: 'NOW', category: 'DateTime', returns: 'DateTime', signature: 'NOW()',
    description: 'The current date and time in UTC. Every call within one record gives the same instant.',
    examples: [ex('YEAR(NOW()) >= 2024', true), ex('NOW() >= TODAY()', true)] },
  { name: 'TODAY', category: 'DateTime', returns: 'DateTime', signature: 'TODAY()',
    description: 'The current date at 00:00 UTC.',
    examples: [ex('HOUR(TODAY())', 0), ex('MINUTE(TODAY())', 0)] },
  { name: 'DATEADD', category: 'DateTime', returns: 'DateTime', signature: 'DATEADD(datepart, number, date)',
    description: `date moved by number (truncated to a whole number; negative moves back) units of datepart: ${DATE_PARTS}. Adding months or years keeps the day of the month, or takes the month's last day when it has fewer days.`,
    examples: [ex('DATEADD("month", 1, "2024-01-31")', '2024-02-29T00:00:00.000Z'), ex('DATEADD("hh", -3, "2024-03-01T01:00:00Z")', '2024-02-29T22:00:00.000Z'), ex('DATEADD("day", 10, "2024-12-25")', '2025-01-04T00:00:00.000Z')] },
  { name: 'DATEDIFF', category: 'DateTime', returns: 'Integer', signature: 'DATEDIFF(datepart, startDate, endDate)',
    description: `The number of datepart boundaries crossed from startDate to endDate (negative when endDate is earlier), as in SQL: from 31 January to 1 February is one month. datepart is one of ${DATE_PARTS}; weeks begin on Sunday.`,
    examples: [ex('DATEDIFF("day", "2024-01-01", "2024-03-01")', 60), ex('DATEDIFF("month", "2024-01-31", "2024-02-01")', 1), ex('DATEDIFF("year", "2024-12-31", "2025-01-01")', 1), ex('DATEDIFF("minute", "2024-01-01T10:00:00Z", "2024-01-01T08:30:00Z")', -90)] },
  { name: 'DATEPART', category: 'DateTime', returns: 'Integer', signature: 'DATEPART(datepart, date)',
    description: `One part of date as a number. datepart is one of ${DATE_PARTS}, dayofyear (dy), or weekday (dw; 1 = Sunday to 7 = Saturday). week counts from 1 for the week of 1 January, weeks beginning on Sunday.`,
    examples: [ex('DATEPART("quarter", "2024-08-15")', 3), ex('DATEPART("dw", "2024-03-05")', 3), ex('DATEPART("hh", "2024-03-05T14:07:09Z")', 14)] },
  { name: 'YEAR', category: 'DateTime', returns: 'Integer', signature: 'YEAR(date)',
    description: 'The year of date.',
    examples: [ex('YEAR("2024-03-05")', 2024)] },
  { name: 'MONTH', category: 'DateTime', returns: 'Integer', signature: 'MONTH(date)',
    description: 'The month of date, 1 (January) to 12 (December).',
    examples: [ex('MONTH("2024-03-05")', 3)] },
  { name: 'DAY', category: 'DateTime', returns: 'Integer', signature: 'DAY(date)',
    description: 'The day of the month of date, 1 to 31.',
    examples: [ex('DAY("2024-03-05")', 5)] },
  { name: 'HOUR', category: 'DateTime', returns: 'Integer', signature: 'HOUR(date)',
    description: 'The hour of date in UTC, 0 to 23.',
    examples: [ex('HOUR("2024-03-05T14:07:09Z")', 14), ex('HOUR("2024-03-05T14:07:09+02:00")', 12)] },
  { name: 'MINUTE', category: 'DateTime', returns: 'Integer', signature: 'MINUTE(date)',
    description: 'The minute of date, 0 to 59.',
    examples: [ex('MINUTE("2024-03-05T14:07:09Z")', 7)] },
  { name: 'SECOND', category: 'DateTime', returns: 'Integer', signature: 'SECOND(date)',
    description: 'The second of date, 0 to 59.',
    examples: [ex('SECOND("2024-03-05T14:07:09Z")', 9)] },
  { name: 'WEEKDAY', category: 'DateTime', returns: 'Integer', signature: 'WEEKDAY(date)',
    description: 'The day of the week of date, 1 (Sunday) to 7 (Saturday).',
    examples: [ex('WEEKDAY("2024-03-05")', 3), ex('WEEKDAY("2024-03-09")', 7)] },
  { name: 'DAYOFYEAR', category: 'DateTime', returns: 'Integer', signature: 'DAYOFYEAR(date)',
    description: 'The day of the year of date, 1 to 366.',
    examples: [ex('DAYOFYEAR("2024-03-01")', 61), ex('DAYOFYEAR("2023-12-31")', 365)] },
  { name: 'ISOWEEKNUM', category: 'DateTime', returns: 'Integer', signature: 'ISOWEEKNUM(date)',
    description: 'The ISO-8601 week number of date, 1 to 53: weeks begin on Monday and week 1 holds the year\'s first Thursday, so early January can belong to the last week of the year before.',
    examples: [ex('ISOWEEKNUM("2024-12-30")', 1), ex('ISOWEEKNUM("2021-01-03")', 53)] },
  { name: 'FORMATDATE', category: 'DateTime', returns: 'Text', signature: 'FORMATDATE(date, format)',
    description: 'date (in UTC) written with a format: yyyy and yy year; MMMM, MMM, MM and M month (name, short name, two digits, number); dddd and ddd weekday name; dd and d day; HH and H hour 0-23; hh and h hour 1-12; mm and m minute; ss and s second; fff milliseconds; tt AM or PM. Text in single quotes is copied, as is any other character. Names are in English.',
    examples: [ex('FORMATDATE("2024-03-05T14:07:09Z", "yyyy-MM-dd HH:mm")', '2024-03-05 14:07'), ex('FORMATDATE("2024-03-05", "dddd d MMMM yyyy")', 'Tuesday 5 March 2024'), ex('FORMATDATE("2024-03-05T14:07:09Z", "h:mm tt")', '2:07 PM'), ex('FORMATDATE("2024-03-05", "\'Week of\' MMM d")', 'Week of Mar 5')] },
  { name: 'DATE', category: 'DateTime', returns: 'DateTime', signature: 'DATE(year, month, day)',
    description: 'The date at 00:00 UTC with the given year, month and day. A month or day out of range carries over into the next (or previous) months and years.',
    examples: [ex('DATE(2024, 2, 29)', '2024-02-29T00:00:00.000Z'), ex('DATE(2024, 13, 1)', '2025-01-01T00:00:00.000Z'), ex('DATE(2024, 3, 0)', '2024-02-29T00:00:00.000Z')] },
  { name: 'DATETIME', category: 'DateTime', returns: 'DateTime', signature: 'DATETIME(year, month, day, hour, minute, second)',
    description: 'The instant in UTC with the given parts; out-of-range parts carry over as in DATE.',
    examples: [ex('DATETIME(2024, 3, 5, 14, 7, 9)', '2024-03-05T14:07:09.000Z'), ex('DATETIME(2024, 3, 5, 24, 0, 0)', '2024-03-06T00:00:00.000Z')] },
  { name: 'ADDDAYS', category: 'DateTime', returns: 'DateTime', signature: 'ADDDAYS(date, days)',
    description: 'date moved by days (truncated to a whole number; negative moves back). Same as DATEADD("day", days, date).',
    examples: [ex('ADDDAYS("2024-02-28", 2)', '2024-03-01T00:00:00.000Z'), ex('ADDDAYS("2024-03-01T12:00:00Z", -1)', '2024-02-29T12:00:00.000Z')] },
  { name: 'ADDMONTHS', category: 'DateTime', returns: 'DateTime', signature: 'ADDMONTHS(date, months)',
    description: 'date moved by months, keeping the day of the month or taking the last day of a shorter month. Same as DATEADD("month", months, date).',
    examples: [ex('ADDMONTHS("2024-03-31", -1)', '2024-02-29T00:00:00.000Z'), ex('ADDMONTHS("2024-01-15", 12)', '2025-01-15T00:00:00.000Z')] },
  { name: 'ADDYEARS', category: 'DateTime', returns: 'DateTime', signature: 'ADDYEARS(date, years)',
    description: 'date moved by years; 29 February becomes 28 February in a year that is not a leap year.',
    examples: [ex('ADDYEARS("2024-02-29", 1)', '2025-02-28T00:00:00.000Z')] },
  { name: 'ADDHOURS', category: 'DateTime', returns: 'DateTime', signature: 'ADDHOURS(date, hours)',
    description: 'date moved by hours (truncated to a whole number).',
    examples: [ex('ADDHOURS("2024-03-05T23:30:00Z", 1)', '2024-03-06T00:30:00.000Z')] },
  { name: 'ADDMINUTES', category: 'DateTime', returns: 'DateTime', signature: 'ADDMINUTES(date, minutes)',
    description: 'date moved by minutes (truncated to a whole number).',
    examples: [ex('ADDMINUTES("2024-03-05T10:00:00Z", 90)', '2024-03-05T11:30:00.000Z')] },
  { name: 'ADDSECONDS', category: 'DateTime', returns: 'DateTime', signature: 'ADDSECONDS(date, seconds)',
    description: 'date moved by seconds (truncated to a whole number).',
    examples: [ex('ADDSECONDS("2024-03-05T10:00:00Z", -1)', '2024-03-05T09:59:59.000Z')] },
  { name: 'STARTOFMONTH', category: 'DateTime', returns: 'DateTime', signature: 'STARTOFMONTH(date)',
    description: 'The first day of the month of date, at 00:00 UTC.',
    examples: [ex('STARTOFMONTH("2024-02-17T08:00:00Z")', '2024-02-01T00:00:00.000Z')] },
  { name: 'ENDOFMONTH', category: 'DateTime', returns: 'DateTime', signature: 'ENDOFMONTH(date)',
    description: 'The last day of the month of date, at 00:00 UTC.',
    examples: [ex('ENDOFMONTH("2024-02-17")', '2024-02-29T00:00:00.000Z'), ex('ENDOFMONTH("2023-12-01")', '2023-12-31T00:00:00.000Z')] },
  { name: 'DAYSINMONTH', category: 'DateTime', returns: 'Integer', signature: 'DAYSINMONTH(date)',
    description: 'The number of days in the month of date.',
    examples: [ex('DAYSINMONTH("2023-02-10")', 28), ex('DAYSINMONTH("2024-02-10")', 29)] },
  { name: 'ISLEAPYEAR', category: 'DateTime', returns: 'Boolean', signature: 'ISLEAPYEAR(yearOrDate)',
    description: 'true when the year (a number, or the year of a date) has 366 days: divisible by 4, except centuries not divisible by 400.',
    examples: [ex('ISLEAPYEAR(2024)', true), ex('ISLEAPYEAR(1900)', false), ex('ISLEAPYEAR("2023-06-01")', false)] },
  { name: 'MONTHNAME', category: 'DateTime', returns: 'Text', signature: 'MONTHNAME(date)',
    description: 'The English name of the month of date.',
    examples: [ex('MONTHNAME("2024-03-05")', 'March')] },
  { name: 'DAYNAME', category: 'DateTime', returns: 'Text', signature: 'DAYNAME(date)',
    description: 'The English name of the day of the week of date.',
    examples: [ex('DAYNAME("2024-03-05")', 'Tuesday')] },
  { name: 'TOUNIXTIME', category: 'DateTime', returns: 'Integer', signature: 'TOUNIXTIME(date)',
    description: 'The whole seconds from 1970-01-01T00:00:00Z to date (Unix time).',
    examples: [ex('TOUNIXTIME("2024-01-01T00:00:00Z")', 1704067200)] },
  { name: 'FROMUNIXTIME', category: 'DateTime', returns: 'DateTime', signature: 'FROMUNIXTIME(seconds)',
    description: 'The instant seconds after 1970-01-01T00:00:00Z (Unix time).',
    examples: [ex('FROMUNIXTIME(1704067200)', '2024-01-01T00:00:00.000Z')] },

  // ── Data Conversion ───────────────────────────────────────────────────────────────────────
  { name: 'TOSTRING', category: 'Data Conversion', returns: 'Text', signature: 'TOSTRING(value)',
    description: 'value as text: numbers in the shortest form that reads back the same (no thousands separators, . as decimal point), booleans as true or false, dates as ISO-8601 UTC text. null stays null.',
    examples: [ex('TOSTRING(12.5)', '12.5'), ex('TOSTRING(null)', null), ex('TOSTRING(true)', 'true'), ex('TOSTRING(DATE(2024, 3, 5))', '2024-03-05T00:00:00.000Z')] },
  { name: 'TOINTEGER', category: 'Data Conversion', returns: 'Integer', signature: 'TOINTEGER(value)',
    description: 'value as a whole number, the fraction cut off toward zero. Text is trimmed and read as a decimal number; true is 1 and false 0; null is 0. Text that is not a number fails the record.',
    examples: [ex('TOINTEGER("12.7")', 12), ex('TOINTEGER("-12.7")', -12), ex('TOINTEGER(" 42 ")', 42), ex('TOINTEGER(null)', 0), ex('TOINTEGER(true)', 1)] },
  { name: 'TODECIMAL', category: 'Data Conversion', returns: 'Decimal', signature: 'TODECIMAL(value)',
    description: 'value as a decimal number. Text is trimmed and read with . as the decimal point; true is 1 and false 0; null is 0. Text that is not a number fails the record.',
    examples: [ex('TODECIMAL("3.14")', 3.14), ex('TODECIMAL("-0.5")', -0.5), ex('TODECIMAL(null)', 0), ex('"2" + "1"', 3)] },
  { name: 'TOBOOLEAN', category: 'Data Conversion', returns: 'Boolean', signature: 'TOBOOLEAN(value)',
    description: 'value as true or false. Numbers are true unless 0. Text (trimmed, any case) true, yes, y, on and 1 is true; false, no, n, off, 0 and empty text are false; other text fails the record. null is false.',
    examples: [ex('TOBOOLEAN("Yes")', true), ex('TOBOOLEAN("FALSE")', false), ex('TOBOOLEAN(0)', false), ex('TOBOOLEAN(null)', false)] },
  { name: 'TODATETIME', category: 'Data Conversion', returns: 'DateTime', signature: 'TODATETIME(value, [format])',
    description: 'value as a date: ISO-8601 text (a date alone is 00:00 UTC; no zone means UTC; an offset is converted to UTC), or text in the given format (the codes of FORMATDATE). A date is returned as it is; null stays null. Text that is not a date fails the record.',
    examples: [ex('TODATETIME("2024-03-05")', '2024-03-05T00:00:00.000Z'), ex('TODATETIME("2024-03-05T14:07:09+02:00")', '2024-03-05T12:07:09.000Z'), ex('TODATETIME("05/03/2024", "dd/MM/yyyy")', '2024-03-05T00:00:00.000Z'), ex('TODATETIME(null)', null)] },
  { name: 'ISNUMBER', category: 'Data Conversion', returns: 'Boolean', signature: 'ISNUMBER(value)',
    description: 'true when value is a number, or text that TODECIMAL reads as one. false for null and empty text.',
    examples: [ex('ISNUMBER("12.5")', true), ex('ISNUMBER(7)', true), ex('ISNUMBER("12a")', false), ex('ISNUMBER(null)', false)] },
  { name: 'ISINTEGER', category: 'Data Conversion', returns: 'Boolean', signature: 'ISINTEGER(value)',
    description: 'true when value is a whole number, or text that reads as one.',
    examples: [ex('ISINTEGER("42")', true), ex('ISINTEGER("4.2")', false), ex('ISINTEGER(4.0)', true)] },
  { name: 'ISDATE', category: 'Data Conversion', returns: 'Boolean', signature: 'ISDATE(value)',
    description: 'true when value is a date, or ISO-8601 text of a real calendar date that TODATETIME converts without a format.',
    examples: [ex('ISDATE("2024-02-29")', true), ex('ISDATE("2023-02-29")', false), ex('ISDATE("tomorrow")', false), ex('ISDATE(null)', false)] },
  { name: 'ISBOOLEAN', category: 'Data Conversion', returns: 'Boolean', signature: 'ISBOOLEAN(value)',
    description: 'true when value is a boolean, or text that TOBOOLEAN converts (true, false, yes, no, y, n, on, off, 1, 0 in any case).',
    examples: [ex('ISBOOLEAN("yes")', true), ex('ISBOOLEAN("maybe")', false)] },
  { name: 'TOBASE64', category: 'Data Conversion', returns: 'Text', signature: 'TOBASE64(text)',
    description: 'The UTF-8 bytes of text in base64.',
    examples: [ex('TOBASE64("Ferry")', 'RmVycnk='), ex('TOBASE64("é")', 'w6k=')] },
  { name: 'FROMBASE64', category: 'Data Conversion', returns: 'Text', signature: 'FROMBASE64(text)',
    description: 'The text whose UTF-8 bytes text holds in base64. Text that is not base64 fails the record.',
    examples: [ex('FROMBASE64("RmVycnk=")', 'Ferry')] },
  { name: 'TOHEX', category: 'Data Conversion', returns: 'Text', signature: 'TOHEX(number)',
    description: 'A non-negative whole number in hexadecimal with upper-case digits.',
    examples: [ex('TOHEX(255)', 'FF'), ex('TOHEX(4096)', '1000')] },
  { name: 'FROMHEX', category: 'Data Conversion', returns: 'Integer', signature: 'FROMHEX(text)',
    description: 'The whole number written in hexadecimal in text (any case). Text that is not hexadecimal fails the record.',
    examples: [ex('FROMHEX("ff")', 255), ex('FROMHEX("1000")', 4096)] },

  // ── Math ──────────────────────────────────────────────────────────────────────────────────
  { name: 'ABS', category: 'Math', returns: 'Decimal', signature: 'ABS(number)',
    description: 'The absolute value of number.',
    examples: [ex('ABS(-4.5)', 4.5), ex('ABS("-3")', 3)] },
  { name: 'ROUND', category: 'Math', returns: 'Decimal', signature: 'ROUND(number, [digits])',
    description: 'number rounded to digits decimal places (default 0; negative rounds to tens, hundreds, …), halves away from zero. The decimal value as written is rounded, so 1.005 becomes 1.01.',
    examples: [ex('ROUND(2.5)', 3), ex('ROUND(-2.5)', -3), ex('ROUND(3.14159, 2)', 3.14), ex('ROUND(1250, -2)', 1300), ex('ROUND(1.005, 2)', 1.01)] },
  { name: 'ROUNDUP', category: 'Math', returns: 'Decimal', signature: 'ROUNDUP(number, [digits])',
    description: 'number rounded away from zero to digits decimal places (default 0).',
    examples: [ex('ROUNDUP(3.141, 2)', 3.15), ex('ROUNDUP(-3.141, 2)', -3.15), ex('ROUNDUP(2.1)', 3)] },
  { name: 'ROUNDDOWN', category: 'Math', returns: 'Decimal', signature: 'ROUNDDOWN(number, [digits])',
    description: 'number rounded toward zero to digits decimal places (default 0).',
    examples: [ex('ROUNDDOWN(3.149, 2)', 3.14), ex('ROUNDDOWN(-2.9)', -2)] },
  { name: 'TRUNC', category: 'Math', returns: 'Decimal', signature: 'TRUNC(number, [digits])',
    description: 'number with the digits after digits decimal places (default 0) cut off, toward zero.',
    examples: [ex('TRUNC(-7.8)', -7), ex('TRUNC(3.789, 1)', 3.7)] },
  { name: 'FLOOR', category: 'Math', returns: 'Integer', signature: 'FLOOR(number)',
    description: 'The largest whole number not greater than number.',
    examples: [ex('FLOOR(2.7)', 2), ex('FLOOR(-2.5)', -3)] },
  { name: 'CEILING', category: 'Math', returns: 'Integer', signature: 'CEILING(number)',
    description: 'The smallest whole number not less than number.',
    examples: [ex('CEILING(2.1)', 3), ex('CEILING(-2.5)', -2)] },
  { name: 'MOD', category: 'Math', returns: 'Decimal', signature: 'MOD(number, divisor)',
    description: 'The remainder of number divided by divisor, with the sign of divisor (as in spreadsheets). A divisor of 0 fails the record.',
    examples: [ex('MOD(10, 3)', 1), ex('MOD(-10, 3)', 2), ex('MOD(5.5, 2)', 1.5)] },
  { name: 'QUOTIENT', category: 'Math', returns: 'Integer', signature: 'QUOTIENT(number, divisor)',
    description: 'The whole part of number divided by divisor, cut toward zero. A divisor of 0 fails the record.',
    examples: [ex('QUOTIENT(7, 2)', 3), ex('QUOTIENT(-7, 2)', -3)] },
  { name: 'POWER', category: 'Math', returns: 'Decimal', signature: 'POWER(number, exponent)',
    description: 'number raised to exponent.',
    examples: [ex('POWER(2, 10)', 1024), ex('POWER(9, 0.5)', 3), ex('POWER(2, -1)', 0.5)] },
  { name: 'SQRT', category: 'Math', returns: 'Decimal', signature: 'SQRT(number)',
    description: 'The square root of number. A negative number fails the record.',
    examples: [ex('SQRT(16)', 4), ex('SQRT(2.25)', 1.5)] },
  { name: 'MIN', category: 'Math', returns: 'Decimal', signature: 'MIN(number1, [number2, ...])',
    description: 'The smallest of the numbers. null arguments are left out; null when all are null.',
    examples: [ex('MIN(3, 1, 2)', 1), ex('MIN(5, null, 7)', 5)] },
  { name: 'MAX', category: 'Math', returns: 'Decimal', signature: 'MAX(number1, [number2, ...])',
    description: 'The largest of the numbers. null arguments are left out; null when all are null.',
    examples: [ex('MAX(3, 1, 2)', 3), ex('MAX(-5, null)', -5)] },
  { name: 'SUM', category: 'Math', returns: 'Decimal', signature: 'SUM(number1, [number2, ...])',
    description: 'The sum of the numbers; null arguments are left out.',
    examples: [ex('SUM(1, 2, 3.5)', 6.5), ex('SUM(1, null)', 1)] },
  { name: 'AVERAGE', category: 'Math', returns: 'Decimal', signature: 'AVERAGE(number1, [number2, ...])',
    description: 'The arithmetic mean of the numbers; null arguments are left out; null when all are null.',
    examples: [ex('AVERAGE(2, 4, null)', 3), ex('AVERAGE(1, 2)', 1.5)] },
  { name: 'SIGN', category: 'Math', returns: 'Integer', signature: 'SIGN(number)',
    description: '-1 for a negative number, 0 for zero, 1 for a positive number.',
    examples: [ex('SIGN(-5)', -1), ex('SIGN(0)', 0), ex('SIGN(0.1)', 1)] },
  { name: 'EXP', category: 'Math', returns: 'Decimal', signature: 'EXP(number)',
    description: 'e raised to number.',
    examples: [ex('EXP(0)', 1), ex('EXP(1)', 2.718281828459045)] },
  { name: 'LN', category: 'Math', returns: 'Decimal', signature: 'LN(number)',
    description: 'The natural logarithm of number. A number that is not positive fails the record.',
    examples: [ex('LN(1)', 0), ex('LN(EXP(2))', 2)] },
  { name: 'LOG', category: 'Math', returns: 'Decimal', signature: 'LOG(number, [base])',
    description: 'The logarithm of number to base (default 10).',
    examples: [ex('LOG(100)', 2), ex('LOG(8, 2)', 3)] },
  { name: 'LOG10', category: 'Math', returns: 'Decimal', signature: 'LOG10(number)',
    description: 'The base-10 logarithm of number.',
    examples: [ex('LOG10(1000)', 3)] },
  { name: 'PI', category: 'Math', returns: 'Decimal', signature: 'PI()',
    description: 'The number π to double precision.',
    examples: [ex('PI()', 3.141592653589793), ex('ROUND(PI(), 4)', 3.1416)] },
  { name: 'RAND', category: 'Math', returns: 'Decimal', signature: 'RAND()',
    description: 'A random decimal number from 0 up to but not including 1, new on every call.',
    examples: [ex('RAND() >= 0 AND RAND() < 1', true)] },
  { name: 'RANDBETWEEN', category: 'Math', returns: 'Integer', signature: 'RANDBETWEEN(low, high)',
    description: 'A random whole number from low to high, both included.',
    examples: [ex('RANDBETWEEN(5, 5)', 5), ex('RANDBETWEEN(1, 6) <= 6', true)] },
  { name: 'ISEVEN', category: 'Math', returns: 'Boolean', signature: 'ISEVEN(number)',
    description: 'true when the whole part of number is even.',
    examples: [ex('ISEVEN(4)', true), ex('ISEVEN(3.9)', false)] },
  { name: 'ISODD', category: 'Math', returns: 'Boolean', signature: 'ISODD(number)',
    description: 'true when the whole part of number is odd.',
    examples: [ex('ISODD(3)', true), ex('ISODD(4)', false)] },

  // ── Lookup ────────────────────────────────────────────────────────────────────────────────
  { name: 'LOOKUPTABLEVALUE1', category: 'Lookup', returns: 'Text', signature: 'LOOKUPTABLEVALUE1(tableName, value2)',
    description: `The value1 paired with value2 (matched exactly, case-sensitive) in the Organization's Lookup Table tableName. ${LOOKUP_RULES} When no pair has the value2 the record fails (MAP_LOOKUP_NO_MATCH); LOOKUPTABLEVALUE1_DEFAULT returns a default instead.`,
    examples: [ex('LOOKUPTABLEVALUE1("States", "TX")', 'Texas', STATES), ex('LOOKUPTABLEVALUE1("codes", "X")', 'a', { lookupTables: { Codes: [['b', 'X'], ['a', 'X']] } })] },
  { name: 'LOOKUPTABLEVALUE2', category: 'Lookup', returns: 'Text', signature: 'LOOKUPTABLEVALUE2(tableName, value1)',
    description: `The value2 paired with value1 (matched exactly, case-sensitive) in the Organization's Lookup Table tableName. ${LOOKUP_RULES} When no pair has the value1 the record fails (MAP_LOOKUP_NO_MATCH); LOOKUPTABLEVALUE2_DEFAULT returns a default instead.`,
    examples: [ex('LOOKUPTABLEVALUE2("States", "California")', 'CA', STATES)] },
  { name: 'LOOKUPTABLEVALUE1_DEFAULT', category: 'Lookup', returns: 'Text', signature: 'LOOKUPTABLEVALUE1_DEFAULT(tableName, value2, default)',
    description: 'Like LOOKUPTABLEVALUE1, but returns default when no pair of the table has the value2. A table that does not exist still fails the record (MAP_LOOKUP_TABLE_NOT_FOUND): a wrong name is a mistake in the Map, not a missing value.',
    examples: [ex('LOOKUPTABLEVALUE1_DEFAULT("States", "NV", "Unknown")', 'Nevada', STATES), ex('LOOKUPTABLEVALUE1_DEFAULT("States", "ZZ", "Unknown")', 'Unknown', STATES)] },
  { name: 'LOOKUPTABLEVALUE2_DEFAULT', category: 'Lookup', returns: 'Text', signature: 'LOOKUPTABLEVALUE2_DEFAULT(tableName, value1, default)',
    description: 'Like LOOKUPTABLEVALUE2, but returns default when no pair of the table has the value1. A table that does not exist still fails the record (MAP_LOOKUP_TABLE_NOT_FOUND): a wrong name is a mistake in the Map, not a missing value.',
    examples: [ex('LOOKUPTABLEVALUE2_DEFAULT("States", "Texas", null)', 'TX', STATES), ex('LOOKUPTABLEVALUE2_DEFAULT("States", "Oregon", null)', null, STATES)] },

  // ── Miscellaneous ─────────────────────────────────────────────────────────────────────────
  { name: 'IF', category: 'Miscellaneous', returns: 'Any', signature: 'IF(condition, valueIfTrue, [valueIfFalse])',
    description: 'valueIfTrue when condition is true, otherwise valueIfFalse (null when left out). Only the chosen value is evaluated, so the other may fail without harm. A null condition counts as false.',
    examples: [ex('IF(10 > 5, "big", "small")', 'big'), ex('IF(false, 1)', null), ex('IF(null, "yes", "no")', 'no')] },
  { name: 'ISNULL', category: 'Miscellaneous', returns: 'Boolean', signature: 'ISNULL(value)',
    description: 'true when value is null. Empty text is not null.',
    examples: [ex('ISNULL(null)', true), ex('ISNULL("")', false)] },
  { name: 'ISNULLOREMPTY', category: 'Miscellaneous', returns: 'Boolean', signature: 'ISNULLOREMPTY(value)',
    description: 'true when value is null or empty text. Text of spaces is not empty (see ISBLANK).',
    examples: [ex('ISNULLOREMPTY("")', true), ex('ISNULLOREMPTY(null)', true), ex('ISNULLOREMPTY(" ")', false)] },
  { name: 'ISBLANK', category: 'Miscellaneous', returns: 'Boolean', signature: 'ISBLANK(value)',
    description: 'true when value is null, empty text or text of whitespace only.',
    examples: [ex('ISBLANK("   ")', true), ex('ISBLANK(0)', false)] },
  { name: 'ISNULLORDEFAULT', category: 'Miscellaneous', returns: 'Boolean', signature: 'ISNULLORDEFAULT(value)',
    description: 'true when value is null or the default of its type: empty text, the number 0 or false. Text such as "0" is not a default.',
    examples: [ex('ISNULLORDEFAULT(0)', true), ex('ISNULLORDEFAULT(false)', true), ex('ISNULLORDEFAULT("")', true), ex('ISNULLORDEFAULT("0")', false), ex('ISNULLORDEFAULT(5)', false)] },
  { name: 'COALESCE', category: 'Miscellaneous', returns: 'Any', signature: 'COALESCE(value1, [value2, ...])',
    description: 'The first argument that is not null (empty text counts as a value); null when all are null.',
    examples: [ex('COALESCE(null, "", "x")', ''), ex('COALESCE(null, 2, 3)', 2), ex('COALESCE(null, null)', null)] },
  { name: 'NULLIF', category: 'Miscellaneous', returns: 'Any', signature: 'NULLIF(value1, value2)',
    description: 'null when value1 equals value2, otherwise value1. Handy for turning placeholders such as "N/A" into null.',
    examples: [ex('NULLIF("N/A", "N/A")', null), ex('NULLIF("x", "N/A")', 'x')] },
  { name: 'CHOOSE', category: 'Miscellaneous', returns: 'Any', signature: 'CHOOSE(index, value1, [value2, ...])',
    description: 'The index-th value (1 is value1); null when index is out of range.',
    examples: [ex('CHOOSE(2, "a", "b", "c")', 'b'), ex('CHOOSE(4, "a", "b", "c")', null)] },
  { name: 'SWITCH', category: 'Miscellaneous', returns: 'Any', signature: 'SWITCH(expression, match1, result1, [match2, result2, ...], [default])',
    description: 'The result paired with the first match that equals expression; otherwise default, or null when there is none. Only the chosen result is evaluated.',
    examples: [ex('SWITCH("B", "A", 1, "B", 2, 0)', 2), ex('SWITCH("Z", "A", 1, "B", 2, 0)', 0), ex('SWITCH("Z", "A", 1)', null)] },
  { name: 'IFERROR', category: 'Miscellaneous', returns: 'Any', signature: 'IFERROR(value, valueIfError)',
    description: 'value, or valueIfError when evaluating value fails (a conversion, a missing lookup, a division by zero) — the record then does not fail.',
    examples: [ex('IFERROR(TOINTEGER("abc"), -1)', -1), ex('IFERROR(TOINTEGER("7"), -1)', 7)] },
  { name: 'NEWGUID', category: 'Miscellaneous', returns: 'Text', signature: 'NEWGUID()',
    description: 'A new random GUID (version 4) as 36 lower-case characters, different on every call.',
    examples: [ex('LEN(NEWGUID())', 36), ex('REGEXMATCH(NEWGUID(), "^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")', true)] },
];

/** 32-bit FNV-1a of text from a given start value. */
function fnv1a(text: string, seed: number): number {
  let h = seed >>> 0;
  for (let i = 0; i < text.length; i += 1) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h;
}

/**
 * The stable id of a function: a GUID (RFC 9562 version 8, "custom") derived from its upper-case
 * name, so it never changes between releases, replicas or stores and needs no table.
 */
export function functionId(name: string): string {
  const key = `ferry.formula.function:${name.toUpperCase()}`;
  const hex = [0x811c9dc5, 0x2b7e1516, 0x9e3779b9, 0x6a09e667]
    .map((seed) => fnv1a(key, seed).toString(16).padStart(8, '0'))
    .join('');
  const variant = ((parseInt(hex.charAt(16), 16) & 0x3) | 0x8).toString(16);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-8${hex.slice(13, 16)}-${variant}${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}

/** The argument counts a signature allows: `[…]` parameters are optional, `...` repeats. */
export function arityOf(signature: string): Arity {
  const inner = signature.slice(signature.indexOf('(') + 1, signature.lastIndexOf(')')).trim();
  if (!inner) return { min: 0, max: 0 };
  let depth = 0;
  let min = 0;
  let max = 0;
  let variadic = false;
  for (const raw of inner.split(',')) {
    const opens = raw.split('[').length - 1;
    const optional = depth > 0 || opens > 0;
    depth += opens - (raw.split(']').length - 1);
    if (raw.replace(/[[\]]/g, '').trim() === '...') {
      variadic = true;
      continue;
    }
    max += 1;
    if (!optional) min += 1;
  }
  return { min, max: variadic ? null : max };
}

/** Every formula function, in catalogue order. */
export const FORMULA_FUNCTIONS: readonly FormulaFunction[] = Object.freeze(
  SPECS.map((spec) =>
    Object.freeze({
      ...spec,
      id: functionId(spec.name),
      lastModificationDate: CATALOGUE_LAST_MODIFIED,
      arity: arityOf(spec.signature),
    }),
  ),
);

const BY_NAME = new Map(FORMULA_FUNCTIONS.map((f) => [f.name, f]));

/** The function of that name, in any case; undefined when the language has none. */
export function findFunction(name: string): FormulaFunction | undefined {
  return BY_NAME.get(name.toUpperCase());
}
