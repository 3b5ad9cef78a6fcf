import { describe, expect, it } from 'vitest';
import {
  describeFailure,
  isPermanentFailure,
  smtpEndpoint,
  smtpOptions,
} from '../../../../service/notifications/mailer.js';
import { retryDelayMs } from '../../../../service/notifications/outbox.js';

describe('the SMTP mailer', () => {
  it('reads the server, TLS mode and credentials from the URL', () => {
    expect(smtpOptions('smtp://me%40corp:p%3Ass@mail.example.com:2525')).toMatchObject({
      host: 'mail.example.com',
      port: 2525,
      secure: false,
      auth: { user: 'me@corp', pass: 'p:ss' },
    });
    expect(smtpOptions('smtps://mail.example.com')).toMatchObject({ port: 465, secure: true });
    expect(smtpOptions('smtp://[::1]')).toMatchObject({ host: '::1', port: 587 });
    expect(smtpOptions('smtp://mail.example.com').auth).toBeUndefined();
  });

  it('names the server without its credentials', () => {
    expect(smtpEndpoint('smtp://user:secret@mail.example.com:587')).toBe('smtp://mail.example.com:587');
  });

  it('gives up only when the server refuses the recipient or the message for good', () => {
    expect(
      isPermanentFailure(
        Object.assign(new Error('550 no such user'), { code: 'EENVELOPE', responseCode: 550, command: 'RCPT TO' }),
      ),
    ).toBe(true);
    expect(
      isPermanentFailure(Object.assign(new Error('452 mailbox full'), { code: 'EENVELOPE', responseCode: 452 })),
    ).toBe(false);
    expect(
      isPermanentFailure(Object.assign(new Error('535 bad credentials'), { code: 'EAUTH', responseCode: 535 })),
    ).toBe(false);
    expect(isPermanentFailure(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ESOCKET' }))).toBe(false);
    expect(isPermanentFailure(undefined)).toBe(false);
  });

  it('keeps the password out of a stored failure', () => {
    const err = Object.assign(new Error('Invalid login for s3cret-pw'), { code: 'EAUTH' });
    expect(describeFailure(err, 'smtp://u:s3cret-pw@h:25')).toBe('EAUTH: Invalid login for [redacted]');
  });
});

describe('the retry back-off', () => {
  const timing = { retryBaseMs: 1000, retryMaxMs: 60_000 };
  it('doubles from the base up to the cap, with at most 10 % jitter', () => {
    expect(retryDelayMs(0, timing, () => 0.5)).toBe(1000);
    expect(retryDelayMs(3, timing, () => 0.5)).toBe(8000);
    expect(retryDelayMs(50, timing, () => 0.5)).toBe(60_000);
    expect(retryDelayMs(0, timing, () => 0)).toBe(900);
    expect(retryDelayMs(0, timing, () => 1)).toBe(1100);
  });
});
