// The one-line start-up errors for a data dir whose files cannot be opened (store/operations/data-dir.ts), a full disk first:
// SQLite says "database or disk is full" or, opening a database, only "disk I/O error".
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { explainDataDirError, freeBytes } from '../../src/store/operations/data-dir.ts';

const failure = (code: string, message = 'failed') => Object.assign(new Error(message), { code });

describe('explainDataDirError', () => {
  const dir = mkdtempSync(join(tmpdir(), 'sensorcloud-dd-'));
  const explain = (err: unknown) => explainDataDirError(err, dir, 'SENSORCLOUD_DATA_DIR')?.message ?? null;

  it('a full disk (SQLITE_FULL, ENOSPC): says so, with the space free, and what to do', () => {
    assert.ok(freeBytes(dir)! > 0);
    for (const code of ['SQLITE_FULL', 'ENOSPC']) {
      // (The bytes free move with whatever else writes to this disk meanwhile.)
      const message = explain(failure(code, 'database or disk is full'))!;
      assert.ok(message.startsWith(`cannot open the data in ${dir} (no space left on the device, `), message);
      assert.match(
        message,
        /, [\d,]+ bytes free\): make room on that disk, or point SENSORCLOUD_DATA_DIR at a directory on another disk$/,
      );
    }
  });

  it('a disk I/O error with room on the disk is not called a full disk: it is left as it is', () => {
    assert.equal(explain(failure('SQLITE_IOERR_SHMSIZE', 'disk I/O error')), null);
  });

  it('permissions and damaged files keep their advice; anything else is left as it is', () => {
    assert.match(
      explain(failure('SQLITE_READONLY', 'attempt to write a readonly database'))!,
      /\(read-only file system\): make its files/,
    );
    assert.match(explain(failure('SQLITE_NOTADB', 'file is not a database'))!, /restore it from a backup$/);
    assert.equal(explain(failure('SQLITE_BUSY')), null);
    rmSync(dir, { recursive: true, force: true });
  });
});
