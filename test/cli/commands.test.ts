// Every client command, run as a real child process against one real `sensorcloud serve`, its --json output
// parsed and checked against the API; exit codes for a 404, a 403, a bad secret and a usage error; and at the end,
// that no secret ever appeared in any output except the one command that created it.
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { before, describe, it } from 'node:test';
import { cliCommand, envCredentials, startService, waitFor, type Service } from './harness.ts';

let s: Service;
let p2: string;
let keySecret = '';
const connectorSecret = 'connector-signing-secret-0123456789';

// One service for the file, set up by the first suite's hook (a top-level before() does not run first in Node 20).
let setup: Promise<void> | null = null;
const ready = () =>
  (setup ??= (async () => {
    s = await startService();
    const login = await s.run(['login', '--from', `${s.dataDir}/bootstrap.json`]);
    assert.equal(login.code, 0, login.stderr);
  })());

describe('happy', () => {
  before(ready);

  it('organizations: list, get, permissions', async () => {
    const [orgs, org, permissions] = await Promise.all([
      s.json(['organizations', 'list']),
      s.json(['orgs', 'get']),
      s.json(['organizations', 'permissions']),
    ]);
    assert.deepEqual(
      orgs.map((o: any) => o.name),
      [s.boot.organization],
    );
    assert.equal(org.name, s.boot.organization);
    assert.ok(permissions.includes('project.create'));
  });

  it('projects: list, get, create, update, permissions, labels', async () => {
    const list = await s.json(['projects', 'list']);
    assert.deepEqual(
      list.map((p: any) => p.name),
      [s.boot.project],
    );
    const created = await s.json(['projects', 'create', 'Second project', '--time-location', 'Europe/Oslo']);
    p2 = created.name.split('/')[1];
    assert.equal(created.location.timeLocation, 'Europe/Oslo');
    const updated = await s.json(['projects', 'update', p2, '--display-name', 'Project two', '--latitude', '59.9']);
    assert.deepEqual(
      [updated.displayName, updated.location.latitude, updated.location.timeLocation],
      ['Project two', 59.9, 'Europe/Oslo'],
    );
    const labels = await s.run(['projects', 'labels', p2, '--add', 'env=test']);
    assert.equal(labels.code, 0, labels.stderr);
    const [got, permissions, table] = await Promise.all([
      s.json(['projects', 'get', p2]),
      s.json(['projects', 'permissions', '--project', p2]),
      s.run(['projects', 'list']),
    ]);
    assert.deepEqual(got.labels, { env: 'test' });
    assert.ok(permissions.includes('device.transfer'));
    // The table: a header line and one aligned line per project.
    const lines = table.stdout.trimEnd().split('\n');
    assert.match(lines[0]!, /^ID\s+DISPLAY NAME\s+ORGANIZATION/);
    assert.equal(lines.length, 3);
    assert.equal(lines[1]!.indexOf('  ') > 0, true);
  });

  it('roles: list and get', async () => {
    const [roles, developer] = await Promise.all([s.json(['roles', 'list']), s.json(['roles', 'get', 'developer'])]);
    assert.deepEqual(
      roles.map((r: any) => r.name),
      ['roles/project.user', 'roles/project.developer', 'roles/project.admin', 'roles/organization.admin'],
    );
    assert.ok(developer.permissions.includes('dataconnector.create'));
  });

  it('service accounts, keys and members, with a 403 for a user-role key', async () => {
    const sa = await s.json(['service-accounts', 'create', '--display-name', 'ci-bot']);
    const saId = sa.name.split('/').pop();
    const [list, got, updated] = await Promise.all([
      s.json(['sa', 'list']),
      s.json(['service-accounts', 'get', saId]),
      s.json(['service-accounts', 'update', sa.name, '--basic-auth']),
    ]);
    assert.ok(list.some((a: any) => a.name === sa.name));
    assert.equal(got.email, sa.email);
    assert.equal(updated.enableBasicAuth, true);

    const key = await s.json(['keys', 'create', saId]);
    assert.match(key.secret, /^[0-9a-f]{32}$/);
    keySecret = key.secret;
    const [keys, oneKey] = await Promise.all([
      s.json(['keys', 'list', saId]),
      s.json(['keys', 'get', key.key.id, '--service-account', saId]),
    ]);
    assert.deepEqual(
      keys.map((k: any) => k.id),
      [key.key.id],
    );
    assert.equal(oneKey.name, key.key.name);

    const member = await s.json(['members', 'add', sa.email, '--role', 'user']);
    assert.deepEqual([member.status, member.roles], ['ACCEPTED', ['roles/project.user']]);

    // The new key, from the environment only (as in CI), holds project.user: creating a connector is a 403.
    const asUser = {
      SENSORCLOUD_URL: `${s.url}/v2`,
      SENSORCLOUD_KEY_ID: key.key.id,
      SENSORCLOUD_KEY_SECRET: key.secret,
      SENSORCLOUD_SERVICE_ACCOUNT: sa.email,
      SENSORCLOUD_PROJECT: s.projectId,
    };
    const forbidden = await s.run(['connectors', 'create', '--url', 'https://receiver.test/hook'], { env: asUser });
    assert.equal(forbidden.code, 1, forbidden.stderr);
    assert.match(forbidden.stderr, /error: .*permission/i);
    const readable = await s.run(['devices', 'list', '--json'], { env: asUser });
    assert.equal(readable.code, 0, readable.stderr);

    const [listed, byEmail, memberships] = await Promise.all([
      s.json(['members', 'list']),
      s.json(['members', 'get', sa.email]),
      s.json(['members', 'memberships', saId]),
    ]);
    assert.ok(listed.some((m: any) => m.email === sa.email));
    assert.equal(byEmail.name, `${s.boot.project}/members/${saId}`);
    assert.deepEqual(
      memberships.map((m: any) => m.name),
      [`${s.boot.project}/members/${saId}`],
    );
    const promoted = await s.json(['members', 'update', saId, '--role', 'developer']);
    assert.deepEqual(promoted.roles, ['roles/project.developer']);

    const batch = await s.json(['members', 'batch-add', sa.email, '--to', p2, '--role', 'user']);
    assert.deepEqual(
      batch.members.map((m: any) => m.name),
      [`projects/${p2}/members/${saId}`],
    );
    const removed = await s.run(['members', 'batch-remove', `projects/${p2}/members/${saId}`]);
    assert.equal(removed.code, 0, removed.stderr);
    assert.equal((await s.api('GET', `projects/${p2}/members/${saId}`)).status, 404);

    const keyGone = await s.run(['keys', 'delete', key.key.name]);
    assert.equal(keyGone.code, 0, keyGone.stderr);
    assert.equal((await s.run(['members', 'remove', sa.email])).code, 0);
    assert.equal((await s.run(['service-accounts', 'delete', saId])).code, 0);
    assert.equal((await s.api('GET', sa.name)).status, 404);
  });

  it('invitations: a pending member, its link, accepting it; organization members', async () => {
    const pending = await s.json(['members', 'add', 'alice@example.org', '--role', 'user']);
    assert.equal(pending.status, 'PENDING');
    const link = await s.json(['members', 'invite-url', 'alice@example.org']);
    assert.match(link.inviteUrl, /\/invite\/[^/]+$/);
    const accepted = await s.run(['invites', 'accept', link.inviteUrl, '--display-name', 'Alice'], {
      input: 'correct horse battery staple\n',
    });
    assert.equal(accepted.code, 0, accepted.stderr);
    assert.equal((await s.json(['members', 'get', 'alice@example.org'])).status, 'ACCEPTED');
    assert.equal((await s.run(['members', 'remove', 'alice@example.org'])).code, 0);

    const bob = await s.json(['organizations', 'members', 'add', 'bob@example.org']);
    assert.deepEqual([bob.status, bob.roles], ['PENDING', ['roles/organization.admin']]);
    const [list, got, orgLink] = await Promise.all([
      s.json(['organizations', 'members', 'list']),
      s.json(['organizations', 'members', 'get', 'bob@example.org']),
      s.json(['organizations', 'members', 'invite-url', 'bob@example.org']),
    ]);
    assert.ok(list.some((m: any) => m.email === 'bob@example.org'));
    assert.equal(got.name, bob.name);
    assert.match(orgLink.inviteUrl, /\/invite\//);
    const same = await s.json([
      'organizations',
      'members',
      'update',
      'bob@example.org',
      '--role',
      'organization.admin',
    ]);
    assert.deepEqual(same.roles, ['roles/organization.admin']);
    assert.equal((await s.run(['organizations', 'members', 'remove', bob.name])).code, 0);
  });

  it('devices and the emulator: create, list with filters, get, labels, publish, transfer, delete', async () => {
    const room = await s.json(['devices', 'create', '--type', 'temperature', '--label', 'name=Room 4']);
    const co2 = await s.json(['emulator', 'create', '--type', 'co2', '--label', 'name=Lab']);
    assert.match(room.name, new RegExp(`^${s.boot.project}/devices/emu[0-9a-v]{20}$`));
    assert.deepEqual(room.labels, { name: 'Room 4', 'virtual-sensor': '' });
    const roomId = room.name.split('/').pop();

    const published = await Promise.all([
      s.run(['events', 'publish', roomId, 'temperature', '--value', '21.5']),
      s.run(['emulator', 'publish', co2.name, 'co2', '--ppm', '612']),
      s.run(['events', 'publish', co2.name, 'humidity', '--temperature', '20', '--relative-humidity', '45.5']),
    ]);
    for (const r of published) assert.equal(r.code, 0, r.stderr);
    const [got, temperatureOnly, byLabel] = await Promise.all([
      s.json(['devices', 'get', roomId]),
      s.json(['devices', 'list', '--type', 'temperature']),
      s.json(['devices', 'list', '--label', 'name=Lab', '--order-by', '-type']),
    ]);
    assert.equal(got.reported.temperature.value, 21.5);
    assert.deepEqual(
      temperatureOnly.map((d: any) => d.name),
      [room.name],
    );
    assert.deepEqual(
      byLabel.map((d: any) => d.name),
      [co2.name],
    );
    assert.equal((await s.api('GET', co2.name)).body.reported.co2.ppm, 612);

    // set adds (POST), then changes an existing key (409 → PATCH); remove deletes.
    const set = await s.json(['devices', 'labels', 'set', roomId, 'room=4', 'floor=2']);
    assert.deepEqual(
      set.map((l: any) => [l.key, l.value]),
      [
        ['room', '4'],
        ['floor', '2'],
      ],
    );
    const changed = await s.json(['devices', 'labels', 'set', roomId, 'room=5']);
    assert.deepEqual(
      changed.map((l: any) => l.value),
      ['5'],
    );
    assert.equal((await s.run(['devices', 'labels', 'remove', roomId, 'floor'])).code, 0);
    const batch = await s.json(['devices', 'labels', 'batch', roomId, co2.name, '--add', 'site=oslo']);
    assert.deepEqual(batch.batchErrors, []);
    const afterLabels = (await s.api('GET', room.name)).body.labels;
    assert.deepEqual(afterLabels, { name: 'Room 4', 'virtual-sensor': '', room: '5', site: 'oslo' });
    const replaced = await s.json(['emulator', 'update', co2.name, '--label', 'name=Lab 2']);
    assert.deepEqual(replaced.labels, { name: 'Lab 2', 'virtual-sensor': '' });

    const history = await s.json(['events', 'history', roomId, '--since', '1h']);
    assert.deepEqual(
      history.map((e: any) => e.eventType),
      [...Array(5).fill('labelsChanged'), 'temperature'],
      'one labelsChanged per POST, PATCH, DELETE and batch',
    );
    const onlyTemperature = await s.json(['events', 'history', roomId, '--type', 'temperature']);
    assert.equal(onlyTemperature.length, 1);

    const moved = await s.json(['devices', 'transfer', roomId, '--to', p2]);
    assert.deepEqual(moved.transferredDevices, [room.name]);
    assert.equal((await s.api('GET', `projects/${p2}/devices/${roomId}`)).status, 200);
    const everywhere = await s.json(['devices', 'list', '--all-projects', '--order-by', 'type']);
    assert.deepEqual(
      everywhere.map((d: any) => d.name),
      [co2.name, `projects/${p2}/devices/${roomId}`],
    );
    assert.equal((await s.json(['devices', 'list', '--all-projects', '--limit', '1'])).length, 1);
    const deleted = await Promise.all([
      s.run(['devices', 'delete', `projects/${p2}/devices/${roomId}`]),
      s.run(['emulator', 'delete', co2.name]),
    ]);
    for (const r of deleted) assert.equal(r.code, 0, r.stderr);
    assert.equal((await s.api('GET', co2.name)).status, 404);
  });

  it('events tail prints new events as NDJSON, export writes CSV', async () => {
    const device = await s.json(['devices', 'create', '--type', 'touch']);
    const [node, ...cli] = cliCommand();
    const tail = spawn(node!, [...cli, 'events', 'tail', '--type', 'touch', '--count', '2', '--json'], {
      env: s.cliEnv,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    tail.stdout.on('data', (d: Buffer) => (out += d.toString()));
    tail.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const exited = new Promise<number>((resolve) => tail.once('close', (code) => resolve(code ?? -1)));
    try {
      // The stream announces itself once open; events published from then on are printed.
      await waitFor('the tail to open', () => (/following events/.test(err) ? true : undefined));
      assert.equal((await s.run(['events', 'publish', device.name, 'batteryStatus', '--percentage', '80'])).code, 0);
      assert.equal((await s.run(['events', 'publish', device.name, 'touch'])).code, 0);
      assert.equal((await s.run(['events', 'publish', device.name, 'touch'])).code, 0);
      assert.equal(await exited, 0, err);
    } finally {
      tail.kill('SIGKILL');
    }
    const lines = out
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l));
    assert.deepEqual(
      lines.map((e) => [e.eventType, e.targetName]),
      [
        ['touch', device.name],
        ['touch', device.name],
      ],
    );

    const csv = await s.run(['events', 'export', '--device', device.name, '--format', 'csv']);
    assert.equal(csv.code, 0, csv.stderr);
    const rows = csv.stdout.trimEnd().split('\n');
    assert.equal(rows[0], 'timestamp,device,eventType,eventId,field,value');
    assert.deepEqual(
      rows.slice(1).map((r) => r.split(',')[2]),
      ['touch', 'touch', 'batteryStatus'],
    );
    assert.match(rows[1]!, /,touch,[0-9a-v]{20},,$/, 'a touch has no fields: one row, field and value empty');
    assert.match(rows[3]!, /,batteryStatus,[0-9a-v]{20},percentage,80$/);
  });

  it('connectors: create, list, get, update, disable, enable, sync, metrics, delete', async () => {
    const created = await s.json([
      'connectors',
      'create',
      '--url',
      'https://receiver.test/hook',
      '--display-name',
      'hook',
      '--secret',
      connectorSecret,
      '--events',
      'touch,temperature',
      '--label-keys',
      'name',
      '--header',
      'X-Api-Key: k3y',
    ]);
    assert.deepEqual([created.status, created.events, created.labels], ['ACTIVE', ['touch', 'temperature'], ['name']]);
    // What the API echoes is redacted in every output; the service has the real values.
    assert.deepEqual(created.httpConfig, {
      url: 'https://receiver.test/hook',
      signatureSecret: '<redacted>',
      headers: { 'X-Api-Key': '<redacted>' },
      previousSignatureSecretExpireTime: '',
    });
    const stored = (await s.api('GET', created.name)).body;
    assert.deepEqual(
      [stored.httpConfig.signatureSecret, stored.httpConfig.headers],
      [connectorSecret, { 'X-Api-Key': 'k3y' }],
    );
    const id = created.name.split('/').pop();

    const [list, got, table] = await Promise.all([
      s.json(['connectors', 'list']),
      s.json(['connectors', 'get', id]),
      s.run(['connectors', 'get', id]),
    ]);
    assert.deepEqual(
      list.map((c: any) => c.name),
      [created.name],
    );
    assert.equal(got.httpConfig.signatureSecret, '<redacted>');
    assert.match(table.stdout, /signed\s+yes/);

    const updated = await s.json(['connectors', 'update', id, '--events', 'touch', '--label-keys', 'name,room']);
    assert.deepEqual([updated.events, updated.labels], [['touch'], ['name', 'room']]);
    assert.equal(
      (await s.api('GET', created.name)).body.httpConfig.signatureSecret,
      connectorSecret,
      'untouched fields stay',
    );
    const generated = await s.json(['connectors', 'update', id, '--generate-secret']);
    assert.match(generated.generatedSecret, /^[0-9a-f]{64}$/);
    assert.equal((await s.api('GET', created.name)).body.httpConfig.signatureSecret, generated.generatedSecret);

    assert.equal((await s.json(['connectors', 'disable', id])).status, 'USER_DISABLED');
    const syncDisabled = await s.run(['connectors', 'sync', id]);
    assert.equal(syncDisabled.code, 1, 'sync of a disabled connector is refused by the API');
    assert.equal((await s.json(['connectors', 'enable', id])).status, 'ACTIVE');
    assert.deepEqual(await s.json(['connectors', 'sync', id]), {});
    const metrics = await s.json(['connectors', 'metrics', id]);
    assert.deepEqual(Object.keys(metrics.metrics), ['successCount', 'errorCount', 'latency99p']);
    assert.equal((await s.run(['connectors', 'delete', id])).code, 0);
    assert.equal((await s.api('GET', created.name)).status, 404);
  });

  it('projects use sets the profile default; projects delete', async () => {
    const use = await s.run(['projects', 'use', p2]);
    assert.equal(use.code, 0, use.stderr);
    assert.equal((await s.json(['projects', 'get'])).name, `projects/${p2}`);
    assert.equal((await s.run(['projects', 'use', s.projectId])).code, 0);
    const deleted = await s.run(['projects', 'delete', p2]);
    assert.equal(deleted.code, 0, deleted.stderr);
    assert.equal((await s.api('GET', `projects/${p2}`)).status, 404);
  });

  it('completion scripts for bash and zsh complete commands and options', async () => {
    const [bash, zsh] = await Promise.all([s.run(['completion', 'bash']), s.run(['completion', 'zsh'])]);
    assert.equal(bash.code, 0);
    // bash itself runs the function: `sensorcloud devices l<TAB>` and `sensorcloud events export --f<TAB>`.
    const complete = (words: string[]) =>
      execFileSync(
        'bash',
        [
          '-c',
          `${bash.stdout}\nCOMP_WORDS=(${words.map((w) => `'${w}'`).join(' ')}); COMP_CWORD=${words.length - 1}; _sensorcloud; echo "\${COMPREPLY[*]}"`,
        ],
        { encoding: 'utf8' },
      ).trim();
    assert.equal(complete(['sensorcloud', 'devices', 'l']), 'list labels');
    assert.equal(complete(['sensorcloud', 'events', 'export', '--f']), '--format');
    assert.equal(complete(['sensorcloud', 'connectors', 'di']), 'disable');
    assert.match(zsh.stdout, /^#compdef sensorcloud/);
    assert.match(zsh.stdout, /"devices labels"\) cands=\(set remove batch/);
  });
});

describe('errors', () => {
  before(ready);

  it('exit 1 with the API message for a 404', async () => {
    const r = await s.run(['devices', 'get', 'emu00000000000000000000']);
    assert.equal(r.code, 1);
    assert.equal(r.stderr.trim(), 'error: device not found');
    assert.equal(r.stdout, '');
  });

  it('exit 3 for a wrong secret, with OAuth2 and with Basic Auth', async () => {
    const wrong = { ...envCredentials(s), SENSORCLOUD_KEY_SECRET: '0'.repeat(32) };
    const oauth = await s.run(['projects', 'list'], { env: wrong });
    assert.equal(oauth.code, 3, oauth.stderr);
    assert.match(oauth.stderr, /refused the credentials/);
    // Without the email (and without the profile, which knows it for this key id) the CLI uses Basic Auth.
    const basic = await s.run(['projects', 'list'], {
      env: { ...wrong, SENSORCLOUD_SERVICE_ACCOUNT: undefined, XDG_CONFIG_HOME: `${s.dataDir}/no-profiles` },
    });
    assert.equal(basic.code, 3, basic.stderr);
    assert.match(basic.stderr, /authentication failed/);
  });

  it('exit 2 for usage errors, before anything is sent', async () => {
    const [unknownOption, badType, missing, wrongOption] = await Promise.all([
      s.run(['devices', 'list', '--colour']),
      s.run(['devices', 'create', '--type', 'toaster']),
      s.run(['connectors', 'create']),
      s.run(['events', 'publish', 'emu00000000000000000000', 'touch', '--value', '3']),
    ]);
    assert.deepEqual([unknownOption.code, badType.code, missing.code, wrongOption.code], [2, 2, 2, 2]);
    assert.match(badType.stderr, /--type must be one of temperature/);
    assert.match(missing.stderr, /--url/);
    assert.match(wrongOption.stderr, /--value does not apply to touch events/);
  });

  it('no secret appears in any output but the command that created it', () => {
    const all = s.transcript.join('\n');
    assert.ok(!all.includes(s.boot.serviceAccount.secret), 'the bootstrap key secret');
    assert.ok(!all.includes(connectorSecret), 'a connector signature secret given by the user');
    assert.ok(keySecret !== '');
    // Once in the output of `keys create`, never anywhere else.
    assert.equal(all.split(keySecret).length - 1, 1, 'a created key secret');
  });
});
