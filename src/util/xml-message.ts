import { FerryError } from '../errors/ferry-error.js';

/**
 * XML messages of Event Solutions, read into the JSON object a Map's Wait For Message Block takes
 * (docs/events.md, "XML messages"):
 *
 *   <Order id="7" xmlns="urn:x">           {
 *     <Customer>Ann</Customer>               "id": "7",
 *     <Line><Sku>A</Sku></Line>      ──►     "Customer": "Ann",
 *     <Line><Sku>B</Sku></Line>              "Line": [{ "Sku": "A" }, { "Sku": "B" }]
 *   </Order>                               }
 *
 * - the root element's attributes and child elements become the fields (the root's name is not
 *   kept); an element that repeats becomes an array, in document order;
 * - an element with neither attributes nor child elements is its text, a string ("" when empty);
 *   one with attributes or children is an object, its own non-blank text under `#text`;
 * - names lose their namespace prefix (`ns:Sku` → `Sku`) and `xmlns` declarations are dropped; an
 *   attribute named like a child element of the same parent is kept as `@name`;
 * - attribute values are strings, whitespace-normalized as XML says.
 *
 * A small reader of its own, safe by construction: no DOCTYPE is accepted, so no DTD, no entity
 * declaration and no external entity is ever read (no XXE, no entity expansion); the five
 * predefined entities and character references are the only ones. Nesting is bounded, and the
 * walk is iterative, so no input overflows the stack.
 */
export function xmlToMessage(text: string): Record<string, unknown> {
  return objectOf(new XmlReader(text).document());
}

/** The deepest element nesting read, the same bound as for JSON bodies. */
export const MAX_XML_DEPTH = 100;

interface XmlElement {
  readonly name: string;
  readonly attributes: Array<[string, string]>;
  readonly children: XmlElement[];
  readonly text: string[];
}

const NAME = /[A-Za-z_:\u00C0-\uFFFF][\w.:\-\u00B7\u00C0-\uFFFF]*/y;
const PREDEFINED: Readonly<Record<string, string>> = { lt: '<', gt: '>', amp: '&', quot: '"', apos: "'" };

class XmlReader {
  #at = 0;

  constructor(private readonly src: string) {}

  document(): XmlElement {
    if (this.src.charCodeAt(0) === 0xfeff) this.#at = 1;
    this.#misc(true);
    if (!this.src.startsWith('<', this.#at) || this.#at >= this.src.length) this.#fail('no root element');
    const root = this.#elements();
    this.#misc(false);
    if (this.#at < this.src.length) this.#fail('content after the root element');
    return root;
  }

  /** Whitespace, comments and processing instructions (the XML declaration among them) outside the root. */
  #misc(prolog: boolean): void {
    for (;;) {
      this.#skipSpace();
      if (this.src.startsWith('<?', this.#at)) this.#skipPast('?>', 'processing instruction');
      else if (this.src.startsWith('<!--', this.#at)) this.#skipPast('-->', 'comment');
      else if (this.src.startsWith('<!DOCTYPE', this.#at) || this.src.startsWith('<!doctype', this.#at))
        this.#fail(prolog ? 'a DOCTYPE is not accepted (no DTDs or entity declarations)' : 'a misplaced DOCTYPE');
      else return;
    }
  }

  /** The root element and everything inside it, read without recursion. */
  #elements(): XmlElement {
    const open: XmlElement[] = [];
    let root: XmlElement | undefined;
    do {
      const top = open[open.length - 1];
      if (top) this.#content(top);
      if (this.src.startsWith('</', this.#at)) {
        this.#closeTag(open.pop());
        continue;
      }
      if (open.length >= MAX_XML_DEPTH) this.#fail(`elements nest deeper than ${MAX_XML_DEPTH} levels`);
      const { element, empty } = this.#openTag();
      if (top) top.children.push(element);
      else root = element;
      if (!empty) open.push(element);
    } while (open.length > 0);
    if (!root) this.#fail('no root element');
    return root;
  }

  /** Text, CDATA, comments and processing instructions up to the next tag. */
  #content(into: XmlElement): void {
    for (;;) {
      const lt = this.src.indexOf('<', this.#at);
      if (lt < 0) this.#fail(`the element <${into.name}> is not closed`);
      if (lt > this.#at) into.text.push(this.#decode(this.src.slice(this.#at, lt), this.#at));
      this.#at = lt;
      if (this.src.startsWith('<![CDATA[', lt)) {
        const end = this.src.indexOf(']]>', lt + 9);
        if (end < 0) this.#fail('a CDATA section is not closed');
        into.text.push(this.src.slice(lt + 9, end));
        this.#at = end + 3;
      } else if (this.src.startsWith('<!--', lt)) this.#skipPast('-->', 'comment');
      else if (this.src.startsWith('<?', lt)) this.#skipPast('?>', 'processing instruction');
      else if (this.src.startsWith('<!', lt)) this.#fail('a declaration inside an element');
      else return;
    }
  }

  #openTag(): { element: XmlElement; empty: boolean } {
    this.#at += 1;
    const element: XmlElement = { name: this.#name('an element name'), attributes: [], children: [], text: [] };
    const seen = new Set<string>();
    for (;;) {
      const spaced = this.#skipSpace();
      if (this.src.startsWith('/>', this.#at)) {
        this.#at += 2;
        return { element, empty: true };
      }
      if (this.src.startsWith('>', this.#at)) {
        this.#at += 1;
        return { element, empty: false };
      }
      if (!spaced) this.#fail(`the tag <${element.name}> is malformed`);
      const name = this.#name('an attribute name');
      if (seen.has(name)) this.#fail(`the attribute ${name} appears twice on <${element.name}>`);
      seen.add(name);
      this.#skipSpace();
      if (this.src[this.#at] !== '=') this.#fail(`the attribute ${name} has no value`);
      this.#at += 1;
      this.#skipSpace();
      element.attributes.push([name, this.#attributeValue(name)]);
    }
  }

  #attributeValue(name: string): string {
    const quote = this.src[this.#at];
    if (quote !== '"' && quote !== "'") this.#fail(`the value of ${name} is not quoted`);
    const end = this.src.indexOf(quote, this.#at + 1);
    if (end < 0) this.#fail(`the value of ${name} is not closed`);
    const raw = this.src.slice(this.#at + 1, end);
    if (raw.includes('<')) this.#fail(`the value of ${name} contains <`);
    const value = this.#decode(raw.replace(/[\t\n\r]/g, ' '), this.#at + 1);
    this.#at = end + 1;
    return value;
  }

  #closeTag(element: XmlElement | undefined): void {
    const start = this.#at;
    this.#at += 2;
    const name = this.#name('an element name');
    if (!element || name !== element.name) {
      this.#at = start;
      this.#fail(`</${name}> closes ${element ? `<${element.name}>` : 'nothing'}`);
    }
    this.#skipSpace();
    if (this.src[this.#at] !== '>') this.#fail(`the tag </${name}> is malformed`);
    this.#at += 1;
  }

  #name(what: string): string {
    NAME.lastIndex = this.#at;
    const m = NAME.exec(this.src);
    if (!m) this.#fail(`${what} was expected`);
    this.#at += m[0].length;
    return m[0];
  }

  /** Skips whitespace; true when there was some. */
  #skipSpace(): boolean {
    const from = this.#at;
    while (this.#at < this.src.length && ' \t\r\n'.includes(this.src.charAt(this.#at))) this.#at += 1;
    return this.#at > from;
  }

  #skipPast(end: string, what: string): void {
    const at = this.src.indexOf(end, this.#at);
    if (at < 0) this.#fail(`a ${what} is not closed`);
    this.#at = at + end.length;
  }

  /** Text with its entity and character references replaced; `offset` places errors. */
  #decode(raw: string, offset: number): string {
    if (!raw.includes('&')) return raw;
    return raw.replace(/&([^;&\s]{0,32})(;?)/g, (whole, ref: string, semi: string, at: number) => {
      const code = semi ? codePointOf(ref) : undefined;
      if (code !== undefined) return String.fromCodePoint(code);
      const known = semi ? PREDEFINED[ref] : undefined;
      if (known !== undefined) return known;
      this.#at = offset + at;
      return this.#fail(
        semi
          ? `the entity ${whole} is not one of XML's five (&lt; &gt; &amp; &quot; &apos;) or a character reference`
          : 'a & that starts no entity: write it as &amp;',
      );
    });
  }

  #fail(why: string): never {
    const before = this.src.slice(0, this.#at);
    const line = before.split('\n').length;
    const column = this.#at - before.lastIndexOf('\n');
    throw new FerryError(
      'EVT_MESSAGE_INVALID',
      `The XML message cannot be read: ${why} (line ${line}, column ${column}).`,
    );
  }
}

/** The code point of a character reference (`#65`, `#x41`), when it names a character XML allows. */
function codePointOf(ref: string): number | undefined {
  const m = /^#(?:x([0-9A-Fa-f]{1,6})|([0-9]{1,7}))$/.exec(ref);
  if (!m) return undefined;
  const code = m[1] !== undefined ? parseInt(m[1], 16) : Number(m[2]);
  const allowed =
    code === 0x9 ||
    code === 0xa ||
    code === 0xd ||
    (code >= 0x20 && code <= 0xd7ff) ||
    (code >= 0xe000 && code <= 0xfffd) ||
    (code >= 0x10000 && code <= 0x10ffff);
  return allowed ? code : undefined;
}

const localName = (name: string): string => name.slice(name.indexOf(':') + 1) || name;

/**
 * An element as a value: its text when it has no attributes and no children, otherwise an object.
 * Walks the tree without recursion: children are converted before their parents.
 */
function objectOf(root: XmlElement): Record<string, unknown> {
  const values = new Map<XmlElement, unknown>();
  const order: XmlElement[] = [];
  const stack = [root];
  while (stack.length > 0) {
    const element = stack.pop() as XmlElement;
    order.push(element);
    stack.push(...element.children);
  }
  for (let i = order.length - 1; i >= 0; i--) {
    const element = order[i] as XmlElement;
    const leaf = element.children.length === 0 && element.attributes.length === 0;
    values.set(element, leaf && element !== root ? element.text.join('') : fieldsOf(element, values));
  }
  return values.get(root) as Record<string, unknown>;
}

function fieldsOf(element: XmlElement, values: Map<XmlElement, unknown>): Record<string, unknown> {
  const children = new Map<string, unknown>();
  for (const child of element.children) {
    const key = localName(child.name);
    const value = values.get(child);
    const before = children.get(key);
    if (before === undefined) children.set(key, value);
    else if (Array.isArray(before)) before.push(value);
    else children.set(key, [before, value]);
  }
  // Object.fromEntries defines own properties: a field named __proto__ is data, never a prototype.
  const fields: Array<[string, unknown]> = [];
  const taken = new Set(children.keys());
  for (const [name, value] of element.attributes) {
    if (name === 'xmlns' || name.startsWith('xmlns:')) continue;
    const key = [localName(name), `@${localName(name)}`, name, `@${name}`].find((k) => !taken.has(k));
    if (key === undefined) continue;
    taken.add(key);
    fields.push([key, value]);
  }
  fields.push(...children);
  const text = element.text.join('').trim();
  if (text !== '' && !taken.has('#text')) fields.push(['#text', text]);
  return Object.fromEntries(fields);
}
