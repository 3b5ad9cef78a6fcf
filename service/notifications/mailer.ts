import nodemailer from 'nodemailer';
import type SMTPTransport from 'nodemailer/lib/smtp-transport/index.js';

/** One plain-text mail to one recipient. */
export interface MailMessage {
  readonly to: string;
  readonly subject: string;
  readonly text: string;
}

/** Hands mails to a mail server. */
export interface Mailer {
  /** Resolves when the server accepted the mail; rejects with the server's or the network's error. */
  send(message: MailMessage): Promise<void>;
  close(): void;
}

/** How long the SMTP conversation may stall before an attempt fails (the sender's lease is longer). */
const SMTP_TIMEOUT_MS = 30_000;

/**
 * The mail server of an `smtp://` or `smtps://` URL without its credentials, for log lines:
 * `smtp://mail.example.com:587`.
 */
export function smtpEndpoint(url: string): string {
  const u = new URL(url);
  return `${u.protocol}//${u.host}`;
}

/** nodemailer's SMTP options for a URL: `smtps://` is TLS from the start, `smtp://` upgrades with STARTTLS when offered. */
export function smtpOptions(url: string): SMTPTransport.Options {
  const u = new URL(url);
  const secure = u.protocol === 'smtps:';
  const user = decodeURIComponent(u.username);
  return {
    host: u.hostname.replace(/^\[(.*)\]$/, '$1'),
    port: u.port ? Number(u.port) : secure ? 465 : 587,
    secure,
    ...(user ? { auth: { user, pass: decodeURIComponent(u.password) } } : {}),
    connectionTimeout: SMTP_TIMEOUT_MS,
    greetingTimeout: SMTP_TIMEOUT_MS,
    socketTimeout: SMTP_TIMEOUT_MS,
    // nodemailer's own logging stays off: its transcript would carry the AUTH exchange.
    logger: false,
    debug: false,
  };
}

/** A {@link Mailer} on nodemailer's SMTP transport, one connection per mail. */
export function smtpMailer(url: string, from: string): Mailer {
  const transport = nodemailer.createTransport(smtpOptions(url));
  return {
    async send(m) {
      await transport.sendMail({ from, to: m.to, subject: m.subject, text: m.text });
    },
    close() {
      transport.close();
    },
  };
}

/** What nodemailer says of a failed send: its error code, the SMTP reply code and the command. */
interface SendFailure {
  code?: unknown;
  responseCode?: unknown;
  command?: unknown;
  message?: unknown;
}

/**
 * Whether a failed send is worth another attempt. Only the server refusing the recipient or the
 * message for good (a 5xx reply to RCPT TO or DATA) is final; everything else — no connection,
 * a timeout, a 4xx reply, refused credentials (an operator fixes them) — is retried.
 */
export function isPermanentFailure(err: unknown): boolean {
  const e = (err ?? {}) as SendFailure;
  const reply = typeof e.responseCode === 'number' ? e.responseCode : 0;
  return (e.code === 'EENVELOPE' || e.code === 'EMESSAGE') && reply >= 500 && reply < 600;
}

/** A failed send as one line for the store and the log, with no credentials in it. */
export function describeFailure(err: unknown, smtpUrl: string): string {
  const e = (err ?? {}) as SendFailure;
  const parts = [
    typeof e.code === 'string' ? e.code : undefined,
    typeof e.message === 'string' ? e.message : String(err),
  ].filter(Boolean);
  let text = parts.join(': ').slice(0, 1000);
  const pass = decodeURIComponent(new URL(smtpUrl).password);
  if (pass) text = text.split(pass).join('[redacted]');
  return text;
}
