// Screen 2: organizations and their projects with the spec's counts (sensors, cloud connectors, inventory);
// create, rename and delete a project (the API's refusal, e.g. a project that still has devices, is shown).
import { useState } from 'preact/hooks';
import { api, idOf, listAll } from '../api.ts';
import { ActionButton, Badge, ConfirmButton, ErrorText, Field, Loading, Title, useAction, useLoad } from '../components.tsx';
import { reasonFor, usePermissions } from '../permissions.ts';

function ProjectRow({ project, onChanged }: { project: any; onChanged: () => void }) {
  const id = idOf(project.name);
  const perms = usePermissions(`projects/${id}`);
  const [editing, setEditing] = useState(false);
  const [name, setName] = useState(project.displayName);
  const action = useAction();
  return (
    <tr>
      <td>
        {editing ? (
          <form class="inline" onSubmit={async (e) => {
            e.preventDefault();
            if (await action.run(() => api('PATCH', `/projects/${id}?updateMask=displayName`, { displayName: name }))) {
              setEditing(false);
              onChanged();
            }
          }}>
            <label class="visually-hidden" for={`rename-${id}`}>New name of {project.displayName}</label>
            <input id={`rename-${id}`} value={name} required maxLength={256} onInput={(e) => setName((e.target as HTMLInputElement).value)} />
            <button type="submit" class="primary" disabled={action.busy}>Save</button>
            <button type="button" onClick={() => setEditing(false)}>Cancel</button>
          </form>
        ) : (
          <a href={`/projects/${id}/devices`} class="strong">{project.displayName}</a>
        )}
        <div class="muted small mono">{project.name}</div>
        <ErrorText error={action.error} />
      </td>
      <td class="num">{project.sensorCount}</td>
      <td class="num">{project.cloudConnectorCount}</td>
      <td>{project.inventory ? <Badge kind="info">inventory</Badge> : <span class="muted">no</span>}</td>
      <td class="actions">
        {perms.loaded && !editing ? (
          <>
            <ActionButton allowed={perms.has('project.update')} permission="project.update" onClick={() => setEditing(true)}>Rename</ActionButton>
            {perms.has('project.delete')
              ? <ConfirmButton label="Delete" confirm={`Delete ${project.displayName}?`} onConfirm={async () => {
                  if (await action.run(() => api('DELETE', `/projects/${id}`))) onChanged();
                }} />
              : <ActionButton allowed={false} permission="project.delete">Delete</ActionButton>}
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
    <form class="row-form" onSubmit={async (e) => {
      e.preventDefault();
      if (await action.run(() => api('POST', '/projects', { organization, displayName: name }))) {
        setName('');
        onCreated();
      }
    }}>
      <Field label="New project name">{(id) => <input id={id} required maxLength={256} value={name} onInput={(e) => setName((e.target as HTMLInputElement).value)} />}</Field>
      <button type="submit" class="primary" disabled={action.busy}>Create project</button>
      <ErrorText error={action.error} />
    </form>
  );
}

function Organization({ org, projects, reload }: { org: { name: string; displayName: string }; projects: any[]; reload: () => void }) {
  const perms = usePermissions(org.name);
  return (
    <section class="card" aria-labelledby={`org-${idOf(org.name)}`}>
      <div class="card-head">
        <h2 id={`org-${idOf(org.name)}`}>{org.displayName}</h2>
        <span class="muted small mono">{org.name}</span>
        <span class="spacer" />
        {perms.has('membership.read') ? <a href={`/organizations/${idOf(org.name)}/members`}>Organization members</a> : null}
      </div>
      {projects.length === 0 ? <p class="muted">No projects yet.</p> : (
        <div class="table-wrap">
          <table>
            <thead><tr><th scope="col">Project</th><th scope="col" class="num">Sensors</th><th scope="col" class="num">Cloud connectors</th><th scope="col">Inventory</th><th scope="col"><span class="visually-hidden">Actions</span></th></tr></thead>
            <tbody>{projects.map((p) => <ProjectRow key={p.name} project={p} onChanged={reload} />)}</tbody>
          </table>
        </div>
      )}
      {perms.loaded ? (perms.has('project.create')
        ? <NewProject organization={org.name} onCreated={reload} />
        : <p class="muted small">{reasonFor('project.create')} Creating projects is not offered.</p>) : null}
    </section>
  );
}

export function Projects() {
  const { data, error, reload } = useLoad(async () => {
    const [organizations, projects] = await Promise.all([listAll<any>('/organizations', 'organizations'), listAll<any>('/projects', 'projects')]);
    return { organizations, projects };
  }, []);
  return (
    <section>
      <Title>Projects</Title>
      <ErrorText error={error} />
      {!data ? (error ? null : <Loading />) : (
        <>
          {data.organizations.map((o) => (
            <Organization key={o.name} org={o} projects={data.projects.filter((p) => p.organization === o.name)} reload={reload} />
          ))}
          {(() => {
            // Projects of organizations the caller cannot read (a member of a project only).
            const known = new Set(data.organizations.map((o) => o.name));
            const orphans = data.projects.filter((p) => !known.has(p.organization));
            const byOrg = new Map<string, any[]>();
            for (const p of orphans) byOrg.set(p.organization, [...(byOrg.get(p.organization) ?? []), p]);
            return [...byOrg].map(([name, list]) => (
              <Organization key={name} org={{ name, displayName: list[0].organizationDisplayName || name }} projects={list} reload={reload} />
            ));
          })()}
          {data.projects.length === 0 && data.organizations.length === 0 ? <p>You are not a member of any project yet. Ask an administrator to add you.</p> : null}
        </>
      )}
    </section>
  );
}
