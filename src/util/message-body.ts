import { FerryError } from '../errors/ferry-error.js';
import { jsonNestsDeeperThan, MAX_JSON_DEPTH } from './json-depth.js';
import { xmlToMessage } from './xml-message.js';

/** The largest message, as the JSON text it is stored as: 20 MiB. */
export const MAX_MESSAGE_BYTES = 20 * 1024 * 1024;

/** The most messages one POST may carry (a JSON array): more go in further POSTs. */
export const MAX_MESSAGES_PER_POST = 10_000;

/** The content types a message POST may declare; any other (or none) is read by its first character. */
export const MESSAGE_TYPES = ['application/json', 'application/xml', 'text/xml'] as const;

const utf8 = new TextDecoder('utf-8', { fatal: true });

const invalid = (message: string): FerryError => new FerryError('EVT_MESSAGE_INVALID', message);

/**
 * Event Solution message bodies (docs/events.md "What to send"), read alike wherever they come
 * from: an HTTP POST to a Message Endpoint (the Service) or a delivery of a RabbitMQ queue or NATS
 * JetStream stream (the Agent, src/solutions/brokers).
 */

/**
 * The messages of a POST's body, each as the JSON text of one object, in order (docs/events.md):
 * a JSON object is one message, a JSON array of objects several, an XML document one (converted
 * by {@link xmlToMessage}). A body starting with `<` is XML, one declared XML too; one declared
 * JSON, or starting with `{` or `[`, is JSON; anything else is refused (415). All or nothing: one
 * bad message refuses the body.
 */
export function messagesOf(raw: Buffer | undefined, contentType: string | undefined): string[] {
  const text = decode(raw);
  const start = text.search(/\S/);
  if (start < 0) {
    throw invalid(
      'The body is empty: send one message as a JSON object, several as a JSON array of objects, or one as an XML document.',
    );
  }
  const first = text.charAt(start);
  const declared = mediaKind(contentType);
  if (first === '<' || declared === 'xml') return [sized(JSON.stringify(xmlToMessage(text)), 0)];
  if (declared !== 'json' && first !== '{' && first !== '[') {
    throw new FerryError(
      'API_UNSUPPORTED_MEDIA_TYPE',
      'The body is neither JSON nor XML: send a JSON object or array as application/json, or an XML document as application/xml.',
      { details: { accepted: [...MESSAGE_TYPES] } },
    );
  }
  return jsonMessages(text);
}

/**
 * The messages of a body as objects, in order: the same rules and limits as {@link messagesOf},
 * without writing each message back to JSON text when no message can be over the size limit.
 */
export function messageObjects(raw: Buffer | undefined, contentType: string | undefined): Record<string, unknown>[] {
  const viaText = (): Record<string, unknown>[] =>
    messagesOf(raw, contentType).map((text) => JSON.parse(text) as Record<string, unknown>);
  // A message's JSON text is no longer than the body it came in (whitespace only goes): a body
  // within the limit needs no per-message count.
  if (raw === undefined || raw.length > MAX_MESSAGE_BYTES || firstChar(raw) === '<' || mediaKind(contentType) === 'xml')
    return viaText();
  const text = decode(raw);
  const first = text.charAt(text.search(/\S/));
  if (first === '' || (mediaKind(contentType) !== 'json' && first !== '{' && first !== '[')) return viaText();
  const value = parsedJson(text);
  if (!Array.isArray(value)) {
    if (!isObject(value)) throw invalid('The body must be a JSON object (one message) or an array of objects.');
    return [value];
  }
  checkArray(value);
  return value as Record<string, unknown>[];
}

/** The first character that is not white space, as ASCII (enough to tell `<`). */
function firstChar(raw: Buffer): string {
  for (const b of raw) if (b !== 0x20 && b !== 0x09 && b !== 0x0a && b !== 0x0d) return String.fromCharCode(b);
  return '';
}

function decode(raw: Buffer | undefined): string {
  if (!raw || raw.length === 0) return '';
  try {
    const text = utf8.decode(raw);
    return text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
  } catch {
    throw invalid('The body is not valid UTF-8 text: send messages encoded as UTF-8.');
  }
}

/** `json`, `xml`, or undefined when the type says neither (or is absent). */
function mediaKind(contentType: string | undefined): 'json' | 'xml' | undefined {
  const type = contentType?.split(';')[0]?.trim().toLowerCase() ?? '';
  if (type === 'application/json' || type.endsWith('+json')) return 'json';
  if (type === 'application/xml' || type === 'text/xml' || type.endsWith('+xml')) return 'xml';
  return undefined;
}

function jsonMessages(text: string): string[] {
  const value = parsedJson(text);
  if (!Array.isArray(value)) {
    if (!isObject(value)) throw invalid('The body must be a JSON object (one message) or an array of objects.');
    return [sized(JSON.stringify(value), 0)];
  }
  checkArray(value);
  return value.map((m, i) => sized(JSON.stringify(m), i));
}

function parsedJson(text: string): unknown {
  if (jsonNestsDeeperThan(text, MAX_JSON_DEPTH)) {
    throw invalid(`The body nests arrays and objects deeper than ${MAX_JSON_DEPTH} levels; send flatter messages.`);
  }
  try {
    return JSON.parse(text);
  } catch (err) {
    throw invalid(`The body is not valid JSON: ${err instanceof Error ? err.message : String(err)}`);
  }
}

/** An array body: one to {@link MAX_MESSAGES_PER_POST} objects. */
function checkArray(value: unknown[]): void {
  if (value.length === 0) throw invalid('The body is an empty array: send at least one message.');
  if (value.length > MAX_MESSAGES_PER_POST) {
    throw new FerryError(
      'EVT_MESSAGE_TOO_LARGE',
      `The body holds ${value.length} messages; one POST may carry at most ${MAX_MESSAGES_PER_POST}: send the rest in further POSTs.`,
    );
  }
  const bad = value.findIndex((m) => !isObject(m));
  if (bad >= 0) throw invalid(`Message ${bad} of the array is not a JSON object; every message must be one.`);
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The message's text, unless it is larger than a message may be. */
function sized(text: string, index: number): string {
  // A UTF-16 unit is at most 3 bytes of UTF-8: the bytes are counted only near the limit.
  if (text.length * 3 > MAX_MESSAGE_BYTES) {
    const bytes = Buffer.byteLength(text);
    if (bytes > MAX_MESSAGE_BYTES) {
      throw new FerryError(
        'EVT_MESSAGE_TOO_LARGE',
        `Message ${index} is ${bytes} bytes as JSON; a message may be at most ${MAX_MESSAGE_BYTES} bytes (20 MiB).`,
        { details: { index, bytes, limit: MAX_MESSAGE_BYTES } },
      );
    }
  }
  return text;
}
