import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createConsoleLogger, formatEntry, logFormatOf } from '../../../src/logs/console.js';

function sink(): { out: Writable; text: () => string } {
  let text = '';
  const out = new Writable({
    write(chunk: Buffer, _enc, done) {
      text += chunk.toString();
      done();
    },
  });
  return { out, text: () => text };
}

describe('logFormatOf', () => {
  it('is pretty on a terminal and JSON otherwise, unless FERRY_LOG_FORMAT says', () => {
    expect(logFormatOf({}, true)).toBe('pretty');
    expect(logFormatOf({}, false)).toBe('json');
    expect(logFormatOf({ FERRY_LOG_FORMAT: 'json' }, true)).toBe('json');
    expect(logFormatOf({ FERRY_LOG_FORMAT: 'Pretty' }, false)).toBe('pretty');
    expect(() => logFormatOf({ FERRY_LOG_FORMAT: 'xml' }, true)).toThrow(/FERRY_LOG_FORMAT must be json or pretty/);
  });
});

describe('the pretty format', () => {
  it('prints time, level, message and fields on one line, and redacts', () => {
    const s = sink();
    const log = createConsoleLogger({
      level: 'info',
      format: 'pretty',
      redact: ['*.password'],
      out: s.out,
      colors: false,
    });
    log.info({ signal: 'SIGTERM', user: { password: 'secret' } }, 'shutting down');
    log.debug('not shown');
    expect(s.text()).toMatch(
      /^\d\d:\d\d:\d\d\.\d{3} INFO {2}shutting down {2}signal=SIGTERM user=\{"password":"\[redacted\]"\}\n$/,
    );
  });

  it('puts an error stack under its line', () => {
    const line = formatEntry({
      level: 50,
      time: 0,
      msg: 'failed',
      err: { type: 'Error', message: 'boom', stack: 'Error: boom\n    at x', code: 'E1' },
    });
    expect(line).toMatch(/ERROR failed {2}err=\{"code":"E1"\}\n {4}Error: boom\n {8}at x$/);
  });

  it('JSON stays JSON', () => {
    const s = sink();
    createConsoleLogger({ level: 'info', format: 'json', redact: [], out: s.out }).warn({ n: 1 }, 'x');
    expect(JSON.parse(s.text())).toMatchObject({ level: 40, n: 1, msg: 'x' });
  });
});
