// Data connectors on PostgreSQL. Another process may change a connector at any time: only the active connectors of
// a project, read by every publish, are cached, checked against the config version (config-cache.ts); a single
// connector is always read from the database. The JSON settings (events, labels, headers) are text columns, served
// as stored.
//
// A settings PATCH reads the connector and then writes it whole, in one transaction; the engine's state update
// does the same with status and failing time. Under READ COMMITTED the later write would carry a value read
// before the other committed and undo it, so getForUpdate() locks the row until the commit: the second reader
// waits and reads what the first wrote. Plain reads (the claim's, say) lock nothing.
import type { DataConnectorRecord, DataConnectorRepo } from '../../contract/connector-repos.ts';
import { deliveryConfigOf } from '../../contract/connector-repos.ts';
import { withDataConnectorDefaults } from '../../contract/defaults.ts';
import type { Sql } from '../db.ts';
import { cachedRead, cachedWrite, type ConfigView } from './config-cache.ts';
import { toConnector, type ConnectorRow } from '../../sql/rows.ts';

// NO KEY UPDATE: the lock an UPDATE of these columns takes itself, so a reader never has to upgrade it.
const GET_FOR_UPDATE = 'SELECT * FROM data_connectors WHERE id = $1 FOR NO KEY UPDATE';

/** The delivery controls' columns (max_concurrency, max_rate, label_filters, paused), in that order. */
function configColumns(c: DataConnectorRecord): [number, number, string, boolean] {
  const d = deliveryConfigOf(c);
  return [d.maxConcurrency, d.maxRate, JSON.stringify(d.labelFilters), d.paused];
}

export function createDataConnectorRepo(sql: Sql, view?: ConfigView): DataConnectorRepo {
  return withDataConnectorDefaults(
    {
      async create(c) {
        await cachedWrite(view, () =>
          sql.run(
            `INSERT INTO data_connectors (id, project_id, display_name, status, events, labels, url, headers, signature_secret,
           previous_signature_secret, previous_signature_secret_expire_time, max_concurrency, max_rate, label_filters, paused,
           failing_since, create_time, update_time)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18)`,
            [
              c.id,
              c.projectId,
              c.displayName,
              c.status,
              JSON.stringify(c.events),
              JSON.stringify(c.labels),
              c.url,
              JSON.stringify(c.headers),
              c.signatureSecretSealed,
              c.previousSignatureSecretSealed ?? '',
              c.previousSignatureSecretExpireTime ?? null,
              ...configColumns(c),
              c.failingSince,
              c.createTime,
              c.updateTime,
            ],
          ),
        );
      },
      async get(id) {
        const [r] = await sql.query<ConnectorRow>('SELECT * FROM data_connectors WHERE id = $1', [id]);
        return r ? toConnector(r) : null;
      },
      async getForUpdate(id) {
        const [r] = await sql.query<ConnectorRow>(GET_FOR_UPDATE, [id]);
        return r ? toConnector(r) : null;
      },
      async listByProject(projectId, range) {
        const rows = await sql.query<ConnectorRow>(
          'SELECT * FROM data_connectors WHERE project_id = $1 AND id > $2 ORDER BY id LIMIT $3',
          [projectId, range.after ?? '', range.limit],
        );
        return rows.map(toConnector);
      },
      async countByProject(projectId) {
        const [r] = await sql.query<{ n: number }>('SELECT count(*) AS n FROM data_connectors WHERE project_id = $1', [
          projectId,
        ]);
        return r!.n;
      },
      async listActiveByProject(projectId) {
        return cachedRead(
          view,
          (c) => c.activeConnectors,
          projectId,
          async () => {
            const rows = await sql.query<ConnectorRow>(
              "SELECT * FROM data_connectors WHERE project_id = $1 AND status = 'ACTIVE' ORDER BY id",
              [projectId],
            );
            return rows.map(toConnector);
          },
        );
      },
      async update(c) {
        await cachedWrite(view, () =>
          sql.run(
            `UPDATE data_connectors SET display_name = $1, status = $2, events = $3, labels = $4, url = $5, headers = $6, signature_secret = $7,
           previous_signature_secret = $8, previous_signature_secret_expire_time = $9, max_concurrency = $10, max_rate = $11,
           label_filters = $12, paused = $13, failing_since = $14, update_time = $15
         WHERE id = $16`,
            [
              c.displayName,
              c.status,
              JSON.stringify(c.events),
              JSON.stringify(c.labels),
              c.url,
              JSON.stringify(c.headers),
              c.signatureSecretSealed,
              c.previousSignatureSecretSealed ?? '',
              c.previousSignatureSecretExpireTime ?? null,
              ...configColumns(c),
              c.failingSince,
              c.updateTime,
              c.id,
            ],
          ),
        );
      },
      async updateState(id, status, failingSince, updateTime) {
        // These columns only: a row update takes the row's latest version, so a settings write committed meanwhile stays.
        await cachedWrite(view, () =>
          sql.run('UPDATE data_connectors SET status = $1, failing_since = $2, update_time = $3 WHERE id = $4', [
            status,
            failingSince,
            updateTime,
            id,
          ]),
        );
      },
      async delete(id) {
        await cachedWrite(view, () =>
          sql.run(
            'WITH p AS (DELETE FROM connector_pacing WHERE connector_id = $1) DELETE FROM data_connectors WHERE id = $1',
            [id],
          ),
        );
      },
      async countByStatus() {
        const out: Record<string, number> = {};
        for (const r of await sql.query<{ status: string; n: number }>(
          'SELECT status, count(*) AS n FROM data_connectors GROUP BY status',
        ))
          out[r.status] = r.n;
        return out;
      },
    },
    {
      // One read instead of one per connector (the default's).
      async getMany(ids) {
        const out = new Map<string, DataConnectorRecord>();
        if (ids.length === 0) return out;
        for (const r of await sql.query<ConnectorRow>('SELECT * FROM data_connectors WHERE id = ANY($1::text[])', [
          ids,
        ]))
          out.set(r.id, toConnector(r));
        return out;
      },
    },
  );
}
