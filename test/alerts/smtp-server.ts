// A loopback SMTP server for the notifier's e-mail tests (smtp-server, messages parsed with mailparser): plain SMTP on
// 127.0.0.1 (no STARTTLS), or TLS from the start with a given certificate; authentication optional but checked when given, and an answer to each recipient and each
// message as told (accept, or refuse with a code). Fault injection lives here, not in the service.
import type { AddressInfo } from 'node:net';
import { simpleParser } from 'mailparser';
import { SMTPServer } from 'smtp-server';

export interface ReceivedMail {
  /** The envelope: MAIL FROM and RCPT TO. */
  mailFrom: string;
  rcptTo: string[];
  /** The parsed headers and body. */
  from: string;
  to: string[];
  subject: string;
  text: string;
  /** The user that logged in, or '' without authentication. */
  user: string;
}

export interface SmtpRefusal {
  code: number;
  message: string;
}

export interface SmtpTestServer {
  port: number;
  /** `smtp://[user:password@]127.0.0.1:<port>` (`smtps://` with a certificate) */
  url(credentials?: { user: string; password: string }): string;
  messages: ReceivedMail[];
  /** Refuse every recipient with this reply (null: accept them). */
  refuseRecipients(refusal: SmtpRefusal | null): void;
  /** Refuse every message after its DATA with this reply (null: accept them). */
  refuseData(refusal: SmtpRefusal | null): void;
  close(): Promise<void>;
}

const replyError = (refusal: SmtpRefusal): Error =>
  Object.assign(new Error(refusal.message), { responseCode: refusal.code });

export async function startSmtpServer(
  options: { port?: number; users?: Record<string, string>; tls?: { key: string; cert: string } } = {},
): Promise<SmtpTestServer> {
  const users = options.users ?? {};
  const messages: ReceivedMail[] = [];
  let rcptRefusal: SmtpRefusal | null = null;
  let dataRefusal: SmtpRefusal | null = null;
  const server = new SMTPServer({
    // With a certificate: TLS from the start (smtps://).
    ...(options.tls ? { secure: true, key: options.tls.key, cert: options.tls.cert } : {}),
    authOptional: true,
    allowInsecureAuth: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    onAuth(auth, _session, callback) {
      if (auth.username !== undefined && users[auth.username] === auth.password)
        return callback(null, { user: auth.username });
      callback(replyError({ code: 535, message: 'Authentication failed' }));
    },
    onRcptTo(_address, _session, callback) {
      callback(rcptRefusal ? replyError(rcptRefusal) : null);
    },
    onData(stream, session, callback) {
      const refusal = dataRefusal;
      simpleParser(stream).then(
        (mail) => {
          if (refusal) return callback(replyError(refusal));
          const to = mail.to === undefined ? [] : Array.isArray(mail.to) ? mail.to : [mail.to];
          messages.push({
            mailFrom: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
            rcptTo: session.envelope.rcptTo.map((r) => r.address),
            from: mail.from?.value.map((a) => a.address ?? '').join(', ') ?? '',
            to: to.flatMap((list) => list.value.map((a) => a.address ?? '')),
            subject: mail.subject ?? '',
            text: mail.text ?? '',
            user: typeof session.user === 'string' ? session.user : '',
          });
          callback(null);
        },
        (err: Error) => callback(err),
      );
    },
  });
  await new Promise<void>((resolve, reject) => {
    server.server.once('error', reject);
    server.listen(options.port ?? 0, '127.0.0.1', () => resolve());
  });
  // A client that refuses the certificate or hangs up is an error of that connection, not of the server.
  server.on('error', () => undefined);
  const port = (server.server.address() as AddressInfo).port;
  return {
    port,
    url: (credentials) => {
      const scheme = options.tls ? 'smtps' : 'smtp';
      return credentials
        ? `${scheme}://${encodeURIComponent(credentials.user)}:${encodeURIComponent(credentials.password)}@127.0.0.1:${port}`
        : `${scheme}://127.0.0.1:${port}`;
    },
    messages,
    refuseRecipients(refusal) {
      rcptRefusal = refusal;
    },
    refuseData(refusal) {
      dataRefusal = refusal;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
