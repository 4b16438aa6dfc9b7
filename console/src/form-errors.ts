// API errors in words a user understands, and which form field each concerns. The API names fields in its own
// terms (`httpConfig.url must use https://…`, or a schema validation's `invalid request: body/httpConfig/url must be
// string`); a form maps those paths to its fields, and the error is shown next to the field, in words. Anything
// that names no field of the form is shown at the top of the form. The server stays the authority: these rules
// only reword what it answered, and a message no rule knows is shown as the API wrote it.
// (No import of api.ts, whose router needs a browser: test/unit/console-form-errors.test.ts runs these rules
// against the server's own messages in Node.)

/** API field paths (a prefix matches deeper paths too: `httpConfig.headers` covers `httpConfig.headers.X-Team`) → form field names. */
export type FieldMap = Record<string, string>;

export interface Explained {
  /** The form field it concerns, or null for the form as a whole. */
  field: string | null;
  text: string;
}

export const URL_SCHEME_TEXT = 'The URL must start with https:// (plain http:// and other schemes are refused).';
export const URL_FORMAT_TEXT =
  'Enter the full address of your endpoint, starting with https://, e.g. https://example.com/hook.';

/** The obvious problems of an endpoint URL, found before asking the API (which decides the rest: private addresses…). */
export function urlProblem(url: string): string | null {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return URL_FORMAT_TEXT;
  }
  if (parsed.protocol !== 'https:') return URL_SCHEME_TEXT;
  return parsed.hostname === '' ? URL_FORMAT_TEXT : null;
}

/** Whether the text looks like one e-mail address (the API checks it further). */
export const looksLikeEmail = (text: string): boolean => /^[^@\s]+@[^@\s]+$/.test(text);

/**
 * Key/value rows of a form as an object (labels, label filters): blank rows are skipped; a row without a key, or a key
 * given twice, is what is wrong with `field` (`what` names a row: "Label filter 2 needs a key").
 */
export function rowsToRecord(
  rows: readonly [string, string][],
  field: string,
  what: string,
): { record: Record<string, string> } | { field: string; text: string } {
  const record: Record<string, string> = {};
  for (const [i, [rawKey, value]] of rows.entries()) {
    const key = rawKey.trim();
    if (key === '' && value === '') continue;
    if (key === '') return { field, text: `${what} ${i + 1} needs a key (or remove the row).` };
    if (key in record) return { field, text: `The label key “${key}” is given twice.` };
    record[key] = value;
  }
  return { record };
}

export const SMTP_TEXT =
  'E-mail needs an SMTP server, and this service has none: ask its operator to set SENSORCLOUD_SMTP_URL, or use a webhook.';

type Rule = [RegExp, (m: RegExpExecArray) => string, string?];

/** [API message, its words, the field it concerns when the message does not start with the field's path]. */
const RULES: Rule[] = [
  // Data connectors: the endpoint (src/delivery/ssrf.ts), headers, label keys, events.
  [/^httpConfig\.url must use https:\/\//, () => URL_SCHEME_TEXT],
  [/^httpConfig\.url (is required|must be an absolute)/, () => URL_FORMAT_TEXT],
  [/^httpConfig\.url must have a host/, () => 'The URL needs a host name after https://.'],
  [/^httpConfig\.url must not contain/, () => 'The URL must not contain spaces, tabs, line breaks or backslashes.'],
  [
    /^httpConfig\.url points to a refused address: (.*?); pushes/,
    (m) =>
      `This address cannot receive pushes (${m[1]}): use a public address. An operator can allow private networks with SENSORCLOUD_ALLOW_PRIVATE_ENDPOINTS.`,
  ],
  [
    /^httpConfig\.headers: "(.*)" is not a valid header name/,
    (m) => `“${m[1]}” is not a valid header name: use letters, digits and dashes, without spaces or colons.`,
  ],
  [
    /^httpConfig\.headers: (.*) is reserved/,
    (m) => `${m[1]} is set by the service itself and cannot be a custom header.`,
  ],
  [/^httpConfig\.headers: (.*) is given twice/, (m) => `The header ${m[1]} is given twice (header names ignore case).`],
  [/^httpConfig\.headers: at most (\d+) headers/, (m) => `At most ${m[1]} custom headers.`],
  [
    /^httpConfig\.headers\.(.*) must hold only/,
    (m) => `The value of ${m[1]} may hold only printable characters (no line breaks).`,
  ],
  [
    /^httpConfig\.headers\.(.*) must be at most (\d+) characters/,
    (m) => `The value of ${m[1]} must be at most ${m[2]} characters.`,
  ],
  [/^labels: label key (.*) \("(.*)"\)$/, (m) => `The label key “${m[2]}” ${m[1]}.`],
  [/^labels: at most (\d+) label keys/, (m) => `At most ${m[1]} label keys.`],
  [/^events: unknown event type "(.*)"/, (m) => `“${m[1]}” is not an event type.`],
  // Delivery controls (extensions §X4).
  [
    /^deliveryConfig\.maxConcurrency must be a whole number from (\d+) to (\d+)/,
    (m) => `Enter a whole number from ${m[1]} to ${m[2]}.`,
  ],
  [
    /^deliveryConfig\.maxRate must be .* at most (\d+), or 0/,
    (m) =>
      `Enter a number of pushes per second above 0 and at most ${Number(m[1]).toLocaleString('en-US')}, or leave it empty for no limit.`,
  ],
  [/^deliveryConfig\.labelFilters: label key (.*) \("(.*)"\)$/, (m) => `The label key “${m[2]}” ${m[1]}.`],
  [/^deliveryConfig\.labelFilters: label value (.*) \("(.*)"\)$/, (m) => `The value of the label “${m[2]}” ${m[1]}.`],
  [/^deliveryConfig\.labelFilters: at most (\d+) labels/, (m) => `At most ${m[1]} label filters.`],
  [
    /^a project has at most (\d+) data connectors/,
    (m) => `This project already has ${m[1]} data connectors, the most it may have: delete one first.`,
  ],
  // Notification rules (extensions §X5): a webhook's URL and headers as a connector's, e-mail actions, the trigger,
  // durations, the schedule; and contacts.
  [/^\S+\.webhook\.url must use https:\/\//, () => URL_SCHEME_TEXT],
  [/^\S+\.webhook\.url (is required|must be an absolute)/, () => URL_FORMAT_TEXT],
  [/^\S+\.webhook\.url must have a host/, () => 'The URL needs a host name after https://.'],
  [/^\S+\.webhook\.url must not contain/, () => 'The URL must not contain spaces, tabs, line breaks or backslashes.'],
  [
    /^\S+\.webhook\.url points to a refused address: (.*?); pushes/,
    (m) =>
      `This address cannot receive notifications (${m[1]}): use a public address. An operator can allow private networks with SENSORCLOUD_ALLOW_PRIVATE_ENDPOINTS.`,
  ],
  [
    /^\S+\.webhook\.headers: "(.*)" is not a valid header name/,
    (m) => `“${m[1]}” is not a valid header name: use letters, digits and dashes, without spaces or colons.`,
  ],
  [
    /^\S+\.webhook\.headers: (.*) is reserved/,
    (m) => `${m[1]} is set by the service itself and cannot be a header here.`,
  ],
  [/^\S+: EMAIL actions need an SMTP server/, () => SMTP_TEXT],
  [/^\S+\.recipients\[\d+\] is not an e-mail address: "(.*)"/, (m) => `“${m[1]}” is not an e-mail address.`],
  [
    /^\S+ needs at least one address in recipients or one group/,
    () => 'Enter at least one e-mail address or choose a contact group.',
  ],
  [/^\S+\.subject must not contain line breaks/, () => 'The subject must be a single line.'],
  [
    /^\S+\.contactGroups\[\d+\]: no contact group/,
    () => 'A chosen contact group no longer exists: clear it, or reload the page.',
  ],
  [/^trigger\.range needs a lower bound/, () => 'Enter a lower limit, an upper limit or both.'],
  [
    /^trigger\.range\.lower \((.*)\) must not be above trigger\.range\.upper \((.*)\)/,
    () => 'The lower limit must not be above the upper limit.',
  ],
  [/^trigger\.triggerCount must be a whole number from 0 to (\d+)/, (m) => `Enter a whole number from 1 to ${m[1]}.`],
  [/^(\S+) must be from "1s" to "(\d+)s" \(30 days\)/, () => 'Enter a time from 1 second to 30 days.'],
  [/^(\S+) must be from "0s" to "(\d+)s" \(30 days\)/, () => 'Enter a time of at most 30 days.'],
  [/^(\S+) must be a whole number of seconds/, () => 'Enter a whole number of seconds.'],
  [/^schedule\.timezone: unknown time zone/, () => 'This time zone is not known to the service: choose another.'],
  [/^devices\[\d+\]: no device (\S+) in this project/, (m) => `There is no device ${m[1]} in this project any more.`],
  [
    /^a project has at most (\d+) rules/,
    (m) => `This project already has ${m[1]} rules, the most it may have: delete one first.`,
  ],
  [/^email is not an e-mail address/, () => 'Enter an e-mail address, such as ada@example.com.'],
  [
    /^phoneNumber must be in E\.164 form/,
    () => 'Enter the number in international form, + and up to 15 digits (+4798765432), or leave it empty.',
  ],
  [
    /^a project has at most (\d+) contacts/,
    (m) => `This project already has ${m[1]} contacts, the most it may have: delete one first.`,
  ],
  // Members and invitations.
  [/^email must be an email address/, () => 'Enter an e-mail address, such as ada@example.com.'],
  [
    /^email: no service account has the email (.*)$/,
    (m) => `No service account has the e-mail ${m[1]}. Copy the address from the service account's page.`,
  ],
  [/^member already exists/, () => 'This account is already a member: change its role in the list below.', 'email'],
  [/^roles must be/, () => 'Choose a role.'],
  [
    /^cannot (\w+) the last organization administrator/,
    (m) =>
      `This is the organization's last administrator and cannot be ${m[1] === 'demote' ? 'given another role' : `${m[1]}d`}: add another administrator first.`,
  ],
  [/^the member has already accepted/, () => 'This member has already accepted: there is no invitation to send.'],
  [
    /requires holding every role the account holds; you lack (.*)$/,
    (m) => `Only someone who holds every role of this account may do this; you lack ${m[1]}.`,
  ],
  [/^password must be at least (\d+) characters/, (m) => `The password must have at least ${m[1]} characters.`],
  [/^password must be at most (\d+) characters/, (m) => `The password must have at most ${m[1]} characters.`],
  [
    /^the invitation token is invalid, used or expired/,
    () =>
      'This invitation link no longer works: it was used already, it expired (links last 7 days), or a newer link replaced it. Ask the person who invited you for a new one.',
  ],
  // Service accounts and keys.
  [
    /^a service account has at most (\d+) keys/,
    (m) => `This service account already has ${m[1]} keys, the most it may have: delete one first.`,
  ],
  [
    /^the service account is the last organization admin of (\S+); add another admin first/,
    () => 'This service account is the last administrator of its organization: make someone else administrator first.',
  ],
  // Any resource.
  [/^permission (\S+) required on/, (m) => `Your role does not allow this: it needs the permission ${m[1]}.`],
];

/** Rules for any field: next to the field they need not name it; at the top of the form they do. */
const ANY_FIELD: [RegExp, (m: RegExpExecArray) => string][] = [
  [/^(\S+) must be at most (\d+) characters/, (m) => `at most ${m[2]} characters`],
  [/^(\S+) must NOT have more than (\d+) characters/, (m) => `at most ${m[2]} characters`],
  [/^(\S+) must NOT have fewer than (\d+) characters/, (m) => `at least ${m[2]} characters`],
  [/^(\S+) must be string/, () => 'must be text'],
];

/** `invalid request: body/httpConfig/url must be string` → `httpConfig.url must be string`. */
function normalise(message: string): string {
  const v = /^invalid request: body\/(\S*) (.*)$/.exec(message);
  return v ? `${v[1]!.replace(/\//g, '.')} ${v[2]}` : message;
}

/** The form field a message starts with: the longest mapped path that the message's first word is or is inside of. */
function fieldOf(message: string, fields: FieldMap): string | null {
  const first = /^[^\s:]+/.exec(message)?.[0] ?? '';
  let best: string | null = null;
  for (const path of Object.keys(fields)) {
    if (
      (first === path || first.startsWith(`${path}.`) || first.startsWith(`${path}[`)) &&
      (best === null || path.length > best.length)
    )
      best = path;
  }
  return best === null ? null : fields[best]!;
}

/** A capital and a full stop, unless it starts with a name from the API (`displayName`, `httpConfig.url`). */
const sentence = (text: string) => {
  const t = /^[a-z]+(\s|$)/.test(text) ? text.charAt(0).toUpperCase() + text.slice(1) : text;
  return /[.!?)]$/.test(t) ? t : `${t}.`;
};

/** What to say about an error a call threw, and next to which field of the form (given its map). */
export function explainError(err: unknown, fields: FieldMap = {}): Explained {
  // An ApiError (api.ts): the API's answer, with its status.
  if (!(err instanceof Error && typeof (err as { status?: unknown }).status === 'number')) {
    if (err instanceof TypeError)
      return { field: null, text: 'The service could not be reached. Check that it is running, then try again.' };
    return { field: null, text: err instanceof Error ? err.message : String(err) };
  }
  const message = normalise(err.message);
  for (const [re, words, field] of RULES) {
    const m = re.exec(message);
    if (m) return { field: field !== undefined ? (fields[field] ?? null) : fieldOf(message, fields), text: words(m) };
  }
  const field = fieldOf(message, fields);
  for (const [re, words] of ANY_FIELD) {
    const m = re.exec(message);
    if (m) return { field, text: field === null ? `${m[1]}: ${words(m)}.` : sentence(words(m)) };
  }
  return { field, text: sentence(message) };
}
