// Screen 2: organizations and their projects, each with its number of devices (the project's sensorCount plus
// cloudConnectorCount: the latter counts Cloud Connector devices, not data connectors) and of data connectors
// (read from each shown project's connector list, a few projects at a time); create, rename and delete a project
// (the API's refusal, e.g. a project that still has devices, is shown). The API's `inventory` is always false
// and is not shown.
import { useEffect, useState } from 'preact/hooks';
import { api, errorText, idOf, listAll } from '../api.ts';
import { ActionButton, ConfirmButton, ErrorText, Field, Loading, Title, useAction, useLoad } from '../components.tsx';
import { reasonFor, usePermissions } from '../permissions.ts';

/** Connector lists read at once: a page of many projects asks a few at a time rather than all together. */
const CONNECTOR_READS = 4;
let reading = 0;
const waiting: (() => void)[] = [];

/** Runs `fn` when fewer than CONNECTOR_READS others are running. */
async function limited<T>(fn: () => Promise<T>): Promise<T> {
  if (reading >= CONNECTOR_READS) await new Promise<void>((resolve) => waiting.push(resolve));
  reading++;
  try {
    return await fn();
  } finally {
    reading--;
    waiting.shift()?.();
  }
}

/** The number of data connectors of a project (null while loading; an Error when it could not be read). */
function useConnectorCount(projectId: string, tick: number): number | null | Error {
  const [count, setCount] = useState<number | null | Error>(null);
  useEffect(() => {
    let live = true;
    limited(() => listAll<unknown>(`/projects/${projectId}/dataconnectors`, 'dataConnectors')).then(
      (list) => live && setCount(list.length),
      (err) => live && setCount(err instanceof Error ? err : new Error(String(err))),
    );
    return () => void (live = false);
  }, [projectId, tick]);
  return count;
}

const plural = (n: number, one: string, many: string) => `${n} ${n === 1 ? one : many}`;

function ProjectRow({ project, tick, onChanged }: { project: any; tick: number; onChanged: () => void }) {
  const id = idOf(project.name);
  const perms = usePermissions(`projects/${id}`);
  const [editing, setEditing] = useState(false);
  const [name, setName] = useState(project.displayName);
  const action = useAction();
  const connectors = useConnectorCount(id, tick);
  const devices = project.sensorCount + project.cloudConnectorCount;
  return (
    <tr>
      <td class="stack-title">
        {editing ? (
          <form
            class="inline"
            onSubmit={async (e) => {
              e.preventDefault();
              if (
                await action.run(() => api('PATCH', `/projects/${id}?updateMask=displayName`, { displayName: name }))
              ) {
                setEditing(false);
                onChanged();
              }
            }}
          >
            <label class="visually-hidden" for={`rename-${id}`}>
              New name of {project.displayName}
            </label>
            <input
              id={`rename-${id}`}
              value={name}
              required
              maxLength={256}
              onInput={(e) => setName((e.target as HTMLInputElement).value)}
            />
            <button type="submit" class="primary" disabled={action.busy}>
              Save
            </button>
            <button type="button" onClick={() => setEditing(false)}>
              Cancel
            </button>
          </form>
        ) : (
          <a href={`/projects/${id}/devices`} class="strong">
            {project.displayName}
          </a>
        )}
        <div class="muted small mono">{project.name}</div>
        <ErrorText error={action.error} />
      </td>
      <td class="num" data-label="Devices">
        <a href={`/projects/${id}/devices`} aria-label={plural(devices, 'device', 'devices')}>
          {devices}
        </a>
        {project.cloudConnectorCount > 0 ? (
          <div class="muted small">
            incl. {plural(project.cloudConnectorCount, 'Cloud Connector', 'Cloud Connectors')} (gateway
            {project.cloudConnectorCount === 1 ? '' : 's'})
          </div>
        ) : null}
      </td>
      <td class="num" data-label="Data connectors">
        {connectors === null ? (
          <span class="muted">…</span>
        ) : connectors instanceof Error ? (
          <span class="muted" title={errorText(connectors)}>
            unknown
          </span>
        ) : (
          <a
            href={`/projects/${id}/dataconnectors`}
            aria-label={plural(connectors, 'data connector', 'data connectors')}
          >
            {connectors}
          </a>
        )}
      </td>
      <td class="actions">
        {perms.loaded && !editing ? (
          <>
            <ActionButton
              allowed={perms.has('project.update')}
              permission="project.update"
              onClick={() => setEditing(true)}
            >
              Rename
            </ActionButton>
            {perms.has('project.delete') ? (
              <ConfirmButton
                label="Delete"
                confirm={`Delete ${project.displayName}?`}
                onConfirm={async () => {
                  if (await action.run(() => api('DELETE', `/projects/${id}`))) onChanged();
                }}
              />
            ) : (
              <ActionButton allowed={false} permission="project.delete">
                Delete
              </ActionButton>
            )}
          </>
        ) : null}
      </td>
    </tr>
  );
}

function NewProject({ organization, onCreated }: { organization: string; onCreated: () => void }) {
  const [name, setName] = useState('');
  const action = useAction();
  return (
    <form
      class="row-form"
      onSubmit={async (e) => {
        e.preventDefault();
        if (await action.run(() => api('POST', '/projects', { organization, displayName: name }))) {
          setName('');
          onCreated();
        }
      }}
    >
      <Field label="New project name">
        {(id) => (
          <input
            id={id}
            required
            maxLength={256}
            value={name}
            onInput={(e) => setName((e.target as HTMLInputElement).value)}
          />
        )}
      </Field>
      <button type="submit" class="primary" disabled={action.busy}>
        Create project
      </button>
      <ErrorText error={action.error} />
    </form>
  );
}

function Organization({
  org,
  projects,
  tick,
  reload,
}: {
  org: { name: string; displayName: string };
  projects: any[];
  tick: number;
  reload: () => void;
}) {
  const perms = usePermissions(org.name);
  return (
    <section class="card" aria-labelledby={`org-${idOf(org.name)}`}>
      <div class="card-head">
        <h2 id={`org-${idOf(org.name)}`}>{org.displayName}</h2>
        <span class="muted small mono">{org.name}</span>
        <span class="spacer" />
        {perms.has('membership.read') ? (
          <a href={`/organizations/${idOf(org.name)}/members`}>Organization members</a>
        ) : null}
      </div>
      {projects.length === 0 ? (
        <p class="muted">No projects yet.</p>
      ) : (
        <div class="table-wrap">
          <table class="stack-table projects">
            <thead>
              <tr>
                <th scope="col">Project</th>
                <th scope="col" class="num">
                  Devices
                </th>
                <th scope="col" class="num">
                  Data connectors
                </th>
                <th scope="col">
                  <span class="visually-hidden">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {projects.map((p) => (
                <ProjectRow key={p.name} project={p} tick={tick} onChanged={reload} />
              ))}
            </tbody>
          </table>
        </div>
      )}
      {perms.loaded ? (
        perms.has('project.create') ? (
          <NewProject organization={org.name} onCreated={reload} />
        ) : (
          <p class="muted small">{reasonFor('project.create')} Creating projects is not offered.</p>
        )
      ) : null}
    </section>
  );
}

export function Projects() {
  // Each load is numbered so that the rows read their connector counts again with it.
  const [tick, setTick] = useState(0);
  const { data, error } = useLoad(async () => {
    const [organizations, projects] = await Promise.all([
      listAll<any>('/organizations', 'organizations'),
      listAll<any>('/projects', 'projects'),
    ]);
    return { organizations, projects };
  }, [tick]);
  return (
    <section>
      <Title>Projects</Title>
      <ErrorText error={error} />
      {!data ? (
        error ? null : (
          <Loading />
        )
      ) : (
        <>
          {data.organizations.map((o) => (
            <Organization
              key={o.name}
              org={o}
              projects={data.projects.filter((p) => p.organization === o.name)}
              tick={tick}
              reload={() => setTick(tick + 1)}
            />
          ))}
          {(() => {
            // Projects of organizations the caller cannot read (a member of a project only).
            const known = new Set(data.organizations.map((o) => o.name));
            const orphans = data.projects.filter((p) => !known.has(p.organization));
            const byOrg = new Map<string, any[]>();
            for (const p of orphans) byOrg.set(p.organization, [...(byOrg.get(p.organization) ?? []), p]);
            return [...byOrg].map(([name, list]) => (
              <Organization
                key={name}
                org={{ name, displayName: list[0].organizationDisplayName || name }}
                projects={list}
                tick={tick}
                reload={() => setTick(tick + 1)}
              />
            ));
          })()}
          {data.projects.length === 0 && data.organizations.length === 0 ? (
            <p>You are not a member of any project yet. Ask an administrator to add you.</p>
          ) : null}
        </>
      )}
    </section>
  );
}
