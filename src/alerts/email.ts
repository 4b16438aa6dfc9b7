// Sending an alert's e-mail through the operator's SMTP relay (extensions §X5: SENSORCLOUD_SMTP_URL, from
// SENSORCLOUD_SMTP_FROM), with nodemailer. The `Mailer` is a seam like the delivery `Dispatcher`: the notifier
// (notifier.ts) and its tests see only send() → an outcome. Waits are bounded (10 s for the connection, the greeting
// and each reply; 30 s for the whole exchange); a 5xx refusal is permanent (retrying gets the same answer), anything
// else (relay down, timeout, 4xx) is worth another attempt. The relay's password never reaches an error or a log.
import { rootCertificates } from 'node:tls';
import type { Config } from '../config.ts';
import { readTrustFiles } from '../delivery/dispatcher.ts';
import type { Logger } from '../runtime/logger.ts';

/** One message as an outbox row holds it (placeholders already filled). */
export interface MailMessage {
  to: string[];
  subject: string;
  text: string;
}

export type MailResult = { ok: true } | { ok: false; error: string; permanent: boolean };

export interface Mailer {
  /** Sends one message. Never throws: failures are results. */
  send(message: MailMessage): Promise<MailResult>;
  close(): void;
}

export interface SmtpMailerOptions {
  /** `smtp://[user[:password]@]host[:port]` (STARTTLS when offered) or `smtps://…` (TLS from the start). */
  url: string;
  /** The From address (SENSORCLOUD_SMTP_FROM). */
  from: string;
  /** The longest wait for the connection, the greeting and each reply, ms. Default 10 000. */
  timeoutMs?: number;
  /** The longest whole exchange of one message, ms. Default 30 000. */
  deadlineMs?: number;
  /**
   * Further CA certificates (PEM) to trust for the relay's certificate besides node's bundled roots: the service's
   * SENSORCLOUD_CA_FILE and NODE_EXTRA_CA_CERTS (readTrustFiles, delivery/dispatcher.ts). Default none.
   */
  extraCa?: string[];
}

/** Where to connect, as read from SENSORCLOUD_SMTP_URL. */
export interface SmtpSettings {
  host: string;
  /** Absent: nodemailer's default, 587 for smtp://, 465 for smtps://. */
  port?: number;
  secure: boolean;
  user: string;
  password: string;
}

/** The longest message kept of a failure (it is shown on the alert). */
const MAX_ERROR_CHARS = 500;

/** Reads an SMTP URL; throws an Error saying what is wrong (the message never holds the password). */
export function smtpSettingsOf(url: string): SmtpSettings {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new Error('not a URL: expected smtp://[user:password@]host[:port] or smtps://…');
  }
  if (parsed.protocol !== 'smtp:' && parsed.protocol !== 'smtps:')
    throw new Error(`unsupported scheme "${parsed.protocol}": expected smtp:// or smtps://`);
  if (parsed.hostname === '') throw new Error('no host: expected smtp://[user:password@]host[:port]');
  return {
    // An IPv6 literal comes bracketed.
    host: parsed.hostname.replace(/^\[(.*)\]$/, '$1'),
    port: parsed.port === '' ? undefined : Number(parsed.port),
    secure: parsed.protocol === 'smtps:',
    user: decodeURIComponent(parsed.username),
    password: decodeURIComponent(parsed.password),
  };
}

/** The reply codes that refuse for good: every 5yz except 503 (a bad sequence, not a refusal of the message). */
export function isPermanentReply(responseCode: number | undefined): boolean {
  return responseCode !== undefined && responseCode >= 500 && responseCode <= 599 && responseCode !== 503;
}

interface SmtpError {
  message?: string;
  code?: string;
  responseCode?: number;
}

/** What a failed send says: permanent on a 5xx reply, or on a message the client itself refuses to send. */
export function mailFailureOf(err: unknown, secrets: readonly string[] = []): { error: string; permanent: boolean } {
  const e = (typeof err === 'object' && err !== null ? err : { message: String(err) }) as SmtpError;
  let error = e.code === 'EABORT' ? 'the SMTP exchange took too long' : (e.message ?? String(err));
  for (const secret of secrets) if (secret !== '') error = error.split(secret).join('***');
  error = error.replace(/\s+/g, ' ').trim();
  if (error.length > MAX_ERROR_CHARS) error = `${error.slice(0, MAX_ERROR_CHARS - 1)}…`;
  const responseCode = typeof e.responseCode === 'number' ? e.responseCode : undefined;
  // EENVELOPE without a reply: the client found no valid recipient or sender, which no retry changes.
  const permanent = isPermanentReply(responseCode) || (responseCode === undefined && e.code === 'EENVELOPE');
  return { error, permanent };
}

/**
 * A Mailer over the relay of `options.url`: a connection per message (notifications are few), closed after it.
 * nodemailer is loaded at the first send, so a service without e-mail never loads it.
 */
export function createSmtpMailer(options: SmtpMailerOptions): Mailer {
  const settings = smtpSettingsOf(options.url);
  const timeoutMs = options.timeoutMs ?? 10_000;
  const deadlineMs = options.deadlineMs ?? 30_000;
  const extraCa = options.extraCa ?? [];
  type Transport = import('nodemailer').Transporter;
  let transport: Promise<Transport> | null = null;
  let closed = false;

  const transportOf = (): Promise<Transport> =>
    (transport ??= import('nodemailer').then(({ createTransport }) =>
      createTransport({
        host: settings.host,
        port: settings.port,
        secure: settings.secure,
        auth: settings.user === '' ? undefined : { user: settings.user, pass: settings.password },
        connectionTimeout: timeoutMs,
        greetingTimeout: timeoutMs,
        socketTimeout: timeoutMs,
        dnsTimeout: timeoutMs,
        // Only when there is something to add: `ca` replaces node's roots rather than extending them.
        tls: extraCa.length === 0 ? undefined : { ca: [...rootCertificates, ...extraCa] },
        logger: false,
        debug: false,
      }),
    ));

  return {
    async send(message) {
      if (closed) return { ok: false, error: 'the mailer is closed', permanent: false };
      try {
        const t = await transportOf();
        await t.sendMail({
          from: options.from,
          to: message.to,
          // A header holds one line: a filled placeholder must not start another header.
          subject: message.subject.replace(/[\r\n]+/g, ' '),
          text: message.text,
          signal: AbortSignal.timeout(deadlineMs),
        });
        return { ok: true };
      } catch (err) {
        return { ok: false, ...mailFailureOf(err, [settings.password, encodeURIComponent(settings.password)]) };
      }
    },
    close() {
      closed = true;
      void transport?.then((t) => t.close()).catch(() => undefined);
    },
  };
}

/**
 * The service's mailer: null without SENSORCLOUD_SMTP_URL; else one that trusts, for the relay's certificate, what
 * pushes trust (node's roots, SENSORCLOUD_CA_FILE, NODE_EXTRA_CA_CERTS).
 */
export function createConfiguredMailer(
  config: Pick<Config, 'smtpUrl' | 'smtpFrom' | 'caFile'>,
  logger: Logger,
): Mailer | null {
  if (config.smtpUrl === null || config.smtpFrom === null) return null;
  return createSmtpMailer({
    url: config.smtpUrl,
    from: config.smtpFrom,
    extraCa: readTrustFiles(config.caFile, process.env.NODE_EXTRA_CA_CERTS ?? null, logger),
  });
}
