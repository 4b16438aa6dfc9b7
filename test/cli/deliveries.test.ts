// `connectors deliveries|delivery|resend|replay|test` against a real service pushing to a real HTTPS receiver (a
// touch is answered 200 "ok", a temperature 503 "boom" with Retry-After: 1 h, so its delivery stays RETRYING with
// one attempt): the log with its filters and paging, one delivery's attempt timeline, a resend that arrives with the
// same eventId, a replay's count, a test push that works (exit 0) and two that fail (exit 4), and bad input.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { answerLine } from '../../src/cli/commands/deliveries.ts';
import { startReceiver, type Receiver } from '../helpers/receiver.ts';
import { freePort } from '../helpers/serve-process.ts';
import { testTls } from '../helpers/tls.ts';
import { startService, waitFor, type Service } from './harness.ts';

let s: Service;
let receiver: Receiver;
/** The connector under test (touch and temperature), another to the same receiver (touch), a disabled one to a closed port. */
let a = '';
let c = '';
let b = '';
let thermo = '';
let button = '';
let touchEventId = '';

const idOf = (name: string) => name.slice(name.lastIndexOf('/') + 1);
const eventTypeOf = (body: Buffer) => (JSON.parse(body.toString()) as { event: { eventType: string } }).event.eventType;

/** The deliveries of a connector, read from the API (Basic Auth), newest first. */
async function deliveriesOf(connector: string, query = ''): Promise<any[]> {
  const res = await s.api('GET', `${connector}/deliveries${query}`);
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body.deliveries;
}

let setup: Promise<void> | null = null;
const ready = () =>
  (setup ??= (async () => {
    receiver = await startReceiver({
      reply: (request) =>
        eventTypeOf(request.body) === 'temperature'
          ? { status: 503, retryAfter: '3600', body: 'boom\nsecond line' }
          : { status: 200, body: 'ok' },
    });
    s = await startService({
      SENSORCLOUD_ALLOW_PRIVATE_ENDPOINTS: '127.0.0.0/8',
      SENSORCLOUD_CA_FILE: testTls().caFile,
    });
    const login = await s.run(['login', '--from', `${s.dataDir}/bootstrap.json`]);
    assert.equal(login.code, 0, login.stderr);
    thermo = (await s.json(['devices', 'create', '--type', 'temperature'])).name;
    button = (await s.json(['devices', 'create', '--type', 'touch'])).name;
    a = (await s.json(['connectors', 'create', '--url', receiver.url, '--events', 'touch,temperature'])).name;
    c = (await s.json(['connectors', 'create', '--url', `${receiver.url}?c`, '--events', 'touch'])).name;
    b = (await s.json(['connectors', 'create', '--url', `https://127.0.0.1:${await freePort()}/hook`, '--disabled']))
      .name;
    // One after the other, so the log's order is known: the touch delivered, then the temperature retrying.
    assert.equal((await s.run(['events', 'publish', button, 'touch'])).code, 0);
    const touch = await waitFor('the touch delivered to both connectors', async () => {
      const [ofA, ofC] = await Promise.all([deliveriesOf(a), deliveriesOf(c)]);
      return ofA[0]?.state === 'DELIVERED' && ofC[0]?.state === 'DELIVERED' ? ofA[0] : undefined;
    });
    touchEventId = touch.eventId;
    assert.equal((await s.run(['events', 'publish', thermo, 'temperature', '--value', '21.5'])).code, 0);
    await waitFor('the temperature retrying', async () =>
      (await deliveriesOf(a))[0]?.state === 'RETRYING' ? true : undefined,
    );
  })());

after(async () => {
  await receiver?.close();
});

describe('happy', () => {
  before(ready);

  it('deliveries: newest first, as a table, JSON and names; filters on state, trigger, event, device and time', async () => {
    const all = await s.json(['connectors', 'deliveries', idOf(a)]);
    assert.deepEqual(
      all.map((d: any) => [d.eventType, d.state, d.trigger, d.attemptCount, d.targetName]),
      [
        ['temperature', 'RETRYING', 'EVENT', 1, thermo],
        ['touch', 'DELIVERED', 'EVENT', 1, button],
      ],
    );
    assert.ok(!('attempts' in all[0]), 'list items have no attempts');
    const [temperature, touch] = all;

    const table = await s.run(['connectors', 'deliveries', idOf(a)]);
    assert.equal(table.code, 0, table.stderr);
    const lines = table.stdout.trimEnd().split('\n');
    assert.match(
      lines[0]!,
      /^ID\s+STATE\s+TRIGGER\s+EVENT ID\s+EVENT TYPE\s+DEVICE\s+ATTEMPTS\s+CREATED\s+NEXT ATTEMPT$/,
    );
    assert.equal(lines.length, 3);
    assert.match(
      lines[1]!,
      new RegExp(
        `^${idOf(temperature.name)}\\s+RETRYING\\s+EVENT\\s+${temperature.eventId}\\s+temperature\\s+${idOf(thermo)}\\s+1\\s+${temperature.createTime}\\s+${temperature.nextAttemptTime}$`,
      ),
    );
    assert.match(lines[2]!, /\s+DELIVERED\s+.*\s+-$/, 'a delivered one has no next attempt');
    const quiet = await s.run(['connectors', 'deliveries', a, '-q']);
    assert.deepEqual(quiet.stdout.trimEnd().split('\n'), [temperature.name, touch.name]);

    const names = async (...args: string[]) =>
      (await s.json(['connectors', 'deliveries', idOf(a), ...args])).map((d: any) => d.name);
    assert.deepEqual(await names('--state', 'retrying'), [temperature.name], 'states in any case');
    assert.deepEqual(await names('--state', 'DELIVERED,RETRYING'), [temperature.name, touch.name]);
    assert.deepEqual(await names('--state', 'DELIVERED', '--state', 'EXPIRED'), [touch.name]);
    assert.deepEqual(await names('--trigger', 'EVENT'), [temperature.name, touch.name]);
    assert.deepEqual(await names('--trigger', 'TEST'), []);
    assert.deepEqual(await names('--event-id', touch.eventId), [touch.name]);
    assert.deepEqual(await names('--device', idOf(thermo)), [temperature.name]);
    assert.deepEqual(await names('--device', thermo), [temperature.name]);
    assert.deepEqual(await names('--since', '1h'), [temperature.name, touch.name]);
    assert.deepEqual(await names('--start-time', temperature.createTime), [temperature.name]);
    assert.deepEqual(await names('--until', touch.createTime), [], 'the end is excluded');
    assert.deepEqual(await names('--end-time', temperature.createTime), [touch.name]);

    // Paging: --limit stops (and says so), --all follows every page.
    const limited = await s.run(['connectors', 'deliveries', idOf(a), '--limit', '1', '--json']);
    assert.deepEqual(
      JSON.parse(limited.stdout).map((d: any) => d.name),
      [temperature.name],
    );
    assert.match(limited.stderr, /the newest 1; --limit or --all for more/);
    assert.deepEqual(await names('--all'), [temperature.name, touch.name]);

    const none = await s.run(['connectors', 'deliveries', idOf(a), '--trigger', 'SYNC']);
    assert.deepEqual([none.code, none.stdout, none.stderr], [0, '', 'no deliveries\n']);
  });

  it('deliveries -: where is event X, across every connector of the project', async () => {
    const found = await s.json(['connectors', 'deliveries', '-', '--event-id', touchEventId]);
    assert.deepEqual(found.map((d: any) => d.name.split('/deliveries/')[0]).sort(), [a, c].sort());
    const table = await s.run(['connectors', 'deliveries', '-', '--event-id', touchEventId]);
    assert.equal(table.code, 0, table.stderr);
    assert.match(table.stdout, /^ID\s+CONNECTOR\s+STATE\s+TRIGGER/);
    assert.ok(table.stdout.includes(idOf(a)) && table.stdout.includes(idOf(c)));
  });

  it('delivery: the fields and the attempt timeline (first line of the answer), or the JSON with attempts', async () => {
    const [temperature] = await deliveriesOf(a, '?state=RETRYING');
    const got = await s.json(['connectors', 'delivery', idOf(a), idOf(temperature.name)]);
    assert.equal(got.name, temperature.name);
    assert.equal(got.attempts.length, 1);
    assert.deepEqual(
      [got.attempts[0].outcome, got.attempts[0].httpStatus, got.attempts[0].responseBody],
      ['HTTP_ERROR', 503, 'boom\nsecond line'],
    );
    assert.match(got.attempts[0].duration, /^\d+(\.\d+)?s$/);
    assert.notEqual(got.nextAttemptTime, '');

    const text = await s.run(['connectors', 'delivery', idOf(a), idOf(temperature.name)]);
    assert.equal(text.code, 0, text.stderr);
    assert.match(text.stdout, /^name\s+projects\/.+\/deliveries\//m);
    assert.match(text.stdout, /^state\s+RETRYING$/m);
    assert.match(text.stdout, new RegExp(`^nextAttemptTime\\s+${got.nextAttemptTime}$`, 'm'));
    assert.match(text.stdout, /^Attempts \(1, oldest first\)$/m);
    assert.match(text.stdout, /^TIME\s+DURATION\s+OUTCOME\s+HTTP\s+ERROR\s+ANSWER$/m);
    assert.match(
      text.stdout,
      new RegExp(`^${got.attempts[0].attemptTime}\\s+\\S+s\\s+HTTP_ERROR\\s+503\\s+.*\\bboom$`, 'm'),
    );
    assert.ok(!text.stdout.includes('second line'), 'only the first line of the answer');

    // A full name (as `deliveries -` prints) is taken as it is, with - or its own connector.
    assert.equal((await s.json(['connectors', 'delivery', '-', temperature.name])).name, temperature.name);
    assert.equal((await s.json(['connectors', 'delivery', a, temperature.name])).name, temperature.name);
  });

  it('resend: a new RESEND delivery of the same event, which arrives with the trigger header', async () => {
    const [touch] = await deliveriesOf(a, `?eventId=${touchEventId}`);
    const resent = await s.json(['connectors', 'resend', idOf(a), idOf(touch.name)]);
    assert.notEqual(resent.name, touch.name);
    assert.deepEqual([resent.trigger, resent.eventId, resent.eventType], ['RESEND', touchEventId, 'touch']);
    const arrived = await waitFor('the resend at the receiver', () =>
      receiver.requests.find((r) => r.headers['x-sensorcloud-delivery-trigger'] === 'RESEND'),
    );
    assert.equal(JSON.parse(arrived.body.toString()).event.eventId, touchEventId);

    const text = await s.run(['connectors', 'resend', idOf(a), idOf(touch.name)]);
    assert.equal(text.code, 0, text.stderr);
    assert.match(text.stdout, /^trigger\s+RESEND$/m);
    assert.match(text.stdout, new RegExp(`^eventId\\s+${touchEventId}$`, 'm'));
    assert.match(text.stderr, /Follow it with `sensorcloud connectors delivery /);
  });

  it('replay: the count of events queued again, as JSON, a number with -q, and a sentence', async () => {
    const published = (await deliveriesOf(a, '?trigger=EVENT')).length;
    const window = ['--since', '1h', '--until', 'now'];
    assert.deepEqual(await s.json(['connectors', 'replay', idOf(a), ...window]), { replayedCount: published });
    const touches = await s.run(['connectors', 'replay', idOf(a), ...window, '--event-type', 'touch', '-q']);
    assert.deepEqual([touches.code, touches.stdout], [0, '1\n'], touches.stderr);
    // The temperature was never delivered; the touch was.
    const undelivered = await s.run(['connectors', 'replay', idOf(a), ...window, '--only-undelivered']);
    assert.equal(undelivered.code, 0, undelivered.stderr);
    assert.match(
      undelivered.stdout,
      new RegExp(`^Replayed 1 event to ${a} \\(.+ to .+, only the undelivered\\)\\.\\n$`),
    );
    assert.match(undelivered.stderr, /--trigger REPLAY/);
    const replayed = await waitFor('the replays in the log', async () => {
      const list = await deliveriesOf(a, '?trigger=REPLAY');
      return list.length === published + 2 ? list : undefined;
    });
    assert.ok(replayed.every((d) => d.trigger === 'REPLAY'));
  });

  it('test: a push that works exits 0 and shows the answer; --json prints the delivery', async () => {
    const text = await s.run(['connectors', 'test', idOf(a)]);
    assert.equal(text.code, 0, text.stderr);
    assert.match(text.stdout, /^result\s+DELIVERED$/m);
    assert.match(text.stdout, /^outcome\s+SUCCESS \(HTTP 200\)$/m);
    assert.match(text.stdout, /^duration\s+\d+(\.\d+)?s$/m);
    assert.match(text.stdout, /^answer\s+ok$/m);
    const json = await s.json(['connectors', 'test', idOf(a), '--event-type', 'touch']);
    assert.deepEqual(
      [json.trigger, json.state, json.eventType, json.attempts.length, json.attempts[0].httpStatus],
      ['TEST', 'DELIVERED', 'touch', 1, 200],
    );
    assert.ok(
      (await deliveriesOf(a, '?trigger=TEST')).some((d) => d.name === json.name),
      'listed with trigger=TEST',
    );
  });
});

describe('errors', () => {
  before(ready);

  it('test: a push that fails exits 4 with the result on stdout and the reason on stderr', async () => {
    const http = await s.run(['connectors', 'test', idOf(a), '--event-type', 'temperature']);
    assert.equal(http.code, 4, http.stderr);
    assert.match(http.stdout, /^result\s+FAILED$/m);
    assert.match(http.stdout, /^outcome\s+HTTP_ERROR \(HTTP 503\)$/m);
    assert.match(http.stdout, /^answer\s+boom$/m);
    assert.match(http.stderr, /^error: the test push was not delivered: HTTP_ERROR \(HTTP 503\)/m);

    // A disabled connector can be tested; nothing listens on its port.
    const refused = await s.run(['connectors', 'test', idOf(b), '--json']);
    assert.equal(refused.code, 4, refused.stderr);
    const d = JSON.parse(refused.stdout);
    assert.deepEqual(
      [d.state, d.trigger, d.attempts[0].outcome, d.attempts[0].httpStatus],
      ['FAILED', 'TEST', 'CONNECTION_REFUSED', 0],
    );
    assert.match(refused.stderr, /^error: the test push was not delivered: CONNECTION_REFUSED/m);
  });

  it("bad input: a bad time or window is a usage error (exit 2), the API's 400 comes through (exit 1)", async () => {
    const [badTime, sameOption, noEnd, backwards, badState, disabled, missing, idWithDash, otherConnector] =
      await Promise.all([
        s.run(['connectors', 'deliveries', idOf(a), '--since', 'yesterday']),
        s.run(['connectors', 'deliveries', idOf(a), '--since', '1h', '--start-time', '2h']),
        s.run(['connectors', 'replay', idOf(a), '--start-time', '1h']),
        s.run(['connectors', 'replay', idOf(a), '--start-time', '1h', '--end-time', '2h']),
        s.run(['connectors', 'deliveries', idOf(a), '--state', 'BOGUS']),
        s.run(['connectors', 'replay', idOf(b), '--since', '1h', '--until', 'now']),
        s.run(['connectors', 'delivery', idOf(a), '999999999']),
        s.run(['connectors', 'delivery', '-', '42']),
        s.run(['connectors', 'delivery', idOf(c), `${a}/deliveries/42`]),
      ]);
    assert.deepEqual(
      [badTime, sameOption, noEnd, backwards, badState, disabled, missing, idWithDash, otherConnector].map(
        (r) => r.code,
      ),
      [2, 2, 2, 2, 1, 1, 1, 2, 2],
    );
    assert.match(badTime.stderr, /--since must be a duration before now .* got "yesterday"/);
    assert.match(sameOption.stderr, /give --since or --start-time, not both/);
    assert.match(noEnd.stderr, /--end-time \(or --until\) is missing/);
    assert.match(backwards.stderr, /is not before the end/);
    assert.match(badState.stderr, /^error: .*BOGUS/m);
    assert.match(disabled.stderr, /^error: .*ACTIVE/m);
    assert.match(missing.stderr, /^error: .*not found/m);
    assert.match(idWithDash.stderr, /give the delivery by its full name/);
    assert.match(otherConnector.stderr, new RegExp(`is a delivery of connector ${idOf(a)}, not of ${idOf(c)}`));
    for (const r of [badTime, badState, disabled]) assert.equal(r.stdout, '');
  });
});

describe('units', () => {
  it("an answer's first line for a table, marked when the service kept only its first KiB", () => {
    assert.equal(answerLine({ responseBody: '\n  {"ok":true}\r\nmore', responseBodyTruncated: false }), '{"ok":true}');
    assert.equal(
      answerLine({ responseBody: 'x'.repeat(300), responseBodyTruncated: true }),
      `${'x'.repeat(100)}… (truncated)`,
    );
    assert.equal(answerLine({ responseBody: '', responseBodyTruncated: false }), '');
  });
});
