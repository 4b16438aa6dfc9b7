// Data connectors on SQLite.
import type { DataConnectorRecord, DataConnectorRepo } from '../../contract/connector-repos.ts';
import { deliveryConfigOf } from '../../contract/connector-repos.ts';
import { withDataConnectorDefaults } from '../../contract/defaults.ts';
import { toJson, type SqliteDb } from '../db.ts';
import { toConnector, type ConnectorRow } from '../../sql/rows.ts';

/** The delivery controls' columns (max_concurrency, max_rate, label_filters, paused), in that order. */
function configColumns(c: DataConnectorRecord): [number, number, string, number] {
  const d = deliveryConfigOf(c);
  return [d.maxConcurrency, d.maxRate, toJson(d.labelFilters), d.paused ? 1 : 0];
}

export function createDataConnectorRepo(db: SqliteDb): DataConnectorRepo {
  // get() runs for every delivery outcome and listActiveByProject() for every event: both cached.
  const byId = db.caches.create<DataConnectorRecord | null>();
  const activeByProject = db.caches.create<DataConnectorRecord[]>();
  const invalidate = () => {
    byId.clear();
    activeByProject.clear();
  };
  const read = async (id: string) =>
    byId.get(id, () => {
      const r = db.get<ConnectorRow>('SELECT * FROM data_connectors WHERE id = ?', id);
      return r ? toConnector(r) : null;
    });
  // getMany is the default: get() of each, from the cache.
  return withDataConnectorDefaults({
    async create(c) {
      invalidate();
      db.run(
        `INSERT INTO data_connectors (id, project_id, display_name, status, events, labels, url, headers, signature_secret,
           previous_signature_secret, previous_signature_secret_expire_time, max_concurrency, max_rate, label_filters, paused,
           failing_since, create_time, update_time)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
        c.id,
        c.projectId,
        c.displayName,
        c.status,
        toJson(c.events),
        toJson(c.labels),
        c.url,
        toJson(c.headers),
        c.signatureSecretSealed,
        c.previousSignatureSecretSealed ?? '',
        c.previousSignatureSecretExpireTime ?? null,
        ...configColumns(c),
        c.failingSince,
        c.createTime,
        c.updateTime,
      );
    },
    get: read,
    // One writer: nothing can change the row before this transaction commits.
    getForUpdate: read,
    async listByProject(projectId, range) {
      return db
        .all<ConnectorRow>(
          'SELECT * FROM data_connectors WHERE project_id = ? AND id > ? ORDER BY id LIMIT +?',
          projectId,
          range.after ?? '',
          range.limit,
        )
        .map(toConnector);
    },
    async countByProject(projectId) {
      return db.get<{ n: number }>('SELECT count(*) AS n FROM data_connectors WHERE project_id = ?', projectId)!.n;
    },
    async listActiveByProject(projectId) {
      return activeByProject.get(projectId, () =>
        db
          .all<ConnectorRow>(
            "SELECT * FROM data_connectors WHERE project_id = ? AND status = 'ACTIVE' ORDER BY id",
            projectId,
          )
          .map(toConnector),
      );
    },
    async update(c) {
      invalidate();
      db.run(
        `UPDATE data_connectors SET display_name = ?, status = ?, events = ?, labels = ?, url = ?, headers = ?, signature_secret = ?,
           previous_signature_secret = ?, previous_signature_secret_expire_time = ?, max_concurrency = ?, max_rate = ?,
           label_filters = ?, paused = ?, failing_since = ?, update_time = ?
         WHERE id = ?`,
        c.displayName,
        c.status,
        toJson(c.events),
        toJson(c.labels),
        c.url,
        toJson(c.headers),
        c.signatureSecretSealed,
        c.previousSignatureSecretSealed ?? '',
        c.previousSignatureSecretExpireTime ?? null,
        ...configColumns(c),
        c.failingSince,
        c.updateTime,
        c.id,
      );
    },
    async updateState(id, status, failingSince, updateTime) {
      invalidate();
      db.run(
        'UPDATE data_connectors SET status = ?, failing_since = ?, update_time = ? WHERE id = ?',
        status,
        failingSince,
        updateTime,
        id,
      );
    },
    async delete(id) {
      invalidate();
      db.run('DELETE FROM data_connectors WHERE id = ?', id);
      db.run('DELETE FROM connector_pacing WHERE connector_id = ?', id);
    },
    async countByStatus() {
      const out: Record<string, number> = {};
      for (const r of db.all<{ status: string; n: number }>(
        'SELECT status, count(*) AS n FROM data_connectors GROUP BY status',
      ))
        out[r.status] = r.n;
      return out;
    },
  });
}
