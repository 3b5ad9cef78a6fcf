import { describe, expect, it } from 'vitest';
import { messagesOf } from '../../../../service/events/message-body.js';
import { MAX_XML_DEPTH, xmlToMessage } from '../../../../service/events/xml-message.js';

const codeOf = (fn: () => unknown): string | undefined => {
  try {
    fn();
  } catch (err) {
    return (err as { code?: string }).code;
  }
  return undefined;
};

describe('XML messages as JSON objects', () => {
  it("turns the root's children into fields, repeated elements into arrays, leaf text into strings", () => {
    const xml = `<?xml version="1.0" encoding="UTF-8"?>
      <!-- an order -->
      <Order id="7" status='new' xmlns="urn:orders" xmlns:x="urn:x">
        <Customer>Ann Lee</Customer>
        <x:Total>12.50</x:Total>
        <Line no="1"><Sku>A-1</Sku><Qty>2</Qty></Line>
        <Line no="2"><Sku>B-2</Sku><Qty>1</Qty></Line>
        <Note/>
        <Empty></Empty>
        <Tag>one</Tag><Tag>two</Tag><Tag>three</Tag>
      </Order>`;
    expect(xmlToMessage(xml)).toEqual({
      id: '7',
      status: 'new',
      Customer: 'Ann Lee',
      Total: '12.50',
      Line: [
        { no: '1', Sku: 'A-1', Qty: '2' },
        { no: '2', Sku: 'B-2', Qty: '1' },
      ],
      Note: '',
      Empty: '',
      Tag: ['one', 'two', 'three'],
    });
  });

  it('decodes the five entities, character references and CDATA; keeps leaf text as written', () => {
    const msg = xmlToMessage(
      '<m a="x &amp; y&#10;z"><t> &lt;b&gt; &quot;q&quot; &apos;s&apos; </t><c><![CDATA[<raw> & more]]></c><u>&#x1F600;&#233;</u></m>',
    );
    expect(msg).toEqual({ a: 'x & y\nz', t: ' <b> "q" \'s\' ', c: '<raw> & more', u: '😀é' });
  });

  it('keeps text beside attributes or children under #text, and an attribute named like a child as @name', () => {
    expect(xmlToMessage('<m><price currency="EUR">9.99</price><id>1</id></m>')).toEqual({
      price: { currency: 'EUR', '#text': '9.99' },
      id: '1',
    });
    expect(xmlToMessage('<m id="a"><id>b</id></m>')).toEqual({ '@id': 'a', id: 'b' });
    expect(xmlToMessage('<m>plain</m>')).toEqual({ '#text': 'plain' });
    expect(xmlToMessage('<m/>')).toEqual({});
  });

  it('keeps a field named __proto__ as data', () => {
    const msg = xmlToMessage('<m><__proto__><polluted>yes</polluted></__proto__></m>');
    expect(JSON.stringify(msg)).toBe('{"__proto__":{"polluted":"yes"}}');
    expect(({} as Record<string, unknown>)['polluted']).toBeUndefined();
  });

  it('refuses DOCTYPEs (no DTD, no entity expansion, no external entities)', () => {
    const xxe = '<?xml version="1.0"?><!DOCTYPE m [<!ENTITY x SYSTEM "file:///etc/passwd">]><m>&x;</m>';
    expect(() => xmlToMessage(xxe)).toThrow(/DOCTYPE is not accepted/);
    const bomb = '<!DOCTYPE m [<!ENTITY a "aaaa"><!ENTITY b "&a;&a;&a;">]><m>&b;</m>';
    expect(codeOf(() => xmlToMessage(bomb))).toBe('EVT_MESSAGE_INVALID');
    expect(() => xmlToMessage('<m>&nbsp;</m>')).toThrow(/not one of XML's five/);
    expect(() => xmlToMessage('<m>&#0;</m>')).toThrow(/not one of XML's five/);
  });

  it('refuses malformed documents with the place of the problem', () => {
    const cases: Array<[string, RegExp]> = [
      ['', /no root element/],
      ['   ', /no root element/],
      ['<a><b></a>', /<\/a> closes <b>/],
      ['<a>', /not closed/],
      ['<a></a><b/>', /content after the root/],
      ['<a x="1" x="2"/>', /appears twice/],
      ['<a x=1/>', /not quoted/],
      ['<a>1 & 2</a>', /starts no entity/],
      ['<a\n  b="<"/>', /contains </],
      ['<a><![CDATA[x</a>', /CDATA section is not closed/],
    ];
    for (const [xml, why] of cases) expect(() => xmlToMessage(xml), xml).toThrow(why);
    expect(() => xmlToMessage('<a>\n<b>\n</c></a>')).toThrow(/line 3, column 1/);
  });

  it(`refuses elements nested deeper than ${MAX_XML_DEPTH} levels, and reads very deep documents without recursion`, () => {
    const nest = (n: number) => `${'<e>'.repeat(n)}x${'</e>'.repeat(n)}`;
    expect(() => xmlToMessage(nest(MAX_XML_DEPTH))).not.toThrow();
    expect(() => xmlToMessage(nest(MAX_XML_DEPTH + 1))).toThrow(/deeper than/);
    expect(() => xmlToMessage(nest(200_000))).toThrow(/deeper than/);
  });

  it('is read by the message body when declared XML or when the body starts with <', () => {
    expect(messagesOf(Buffer.from('<m><a>1</a></m>'), undefined)).toEqual(['{"a":"1"}']);
    expect(messagesOf(Buffer.from('\uFEFF <m><a>1</a></m>'), 'application/json')).toEqual(['{"a":"1"}']);
    expect(messagesOf(Buffer.from('<m><a>1</a></m>'), 'text/xml; charset=utf-8')).toEqual(['{"a":"1"}']);
    expect(codeOf(() => messagesOf(Buffer.from('{"a":1}'), 'application/xml'))).toBe('EVT_MESSAGE_INVALID');
  });
});

describe('message bodies', () => {
  it('reads an object as one message and an array as several, in order', () => {
    expect(messagesOf(Buffer.from('{"a": 1, "b": [1, 2]}'), 'application/json')).toEqual(['{"a":1,"b":[1,2]}']);
    expect(messagesOf(Buffer.from('[{"n":1},{"n":2},{"n":3}]'), undefined)).toEqual(['{"n":1}', '{"n":2}', '{"n":3}']);
  });

  it('refuses what is not one object or an array of objects, with EVT_MESSAGE_INVALID', () => {
    for (const body of ['[]', '[1]', '[{"a":1}, "x"]', '42', '"text"', 'null', '{bad json', '[[{}]]', '', '  '])
      expect(
        codeOf(() => messagesOf(Buffer.from(body), 'application/json')),
        body,
      ).toBe('EVT_MESSAGE_INVALID');
    expect(codeOf(() => messagesOf(Buffer.from([0x7b, 0xff, 0x7d]), undefined))).toBe('EVT_MESSAGE_INVALID');
    expect(codeOf(() => messagesOf(Buffer.from('a=1&b=2'), 'application/x-www-form-urlencoded'))).toBe(
      'API_UNSUPPORTED_MEDIA_TYPE',
    );
  });
});
