// Contacts (extensions §X5): the project's contacts, each in at most one contact group, and the contact groups of the
// project's organization, which a rule's e-mail action can name (it mails the group's contacts in the rule's
// project). Project developers and up change contacts; organization administrators change groups.
import { useState } from 'preact/hooks';
import { api, idOf, listAll } from '../api.ts';
import { Badge, ConfirmButton, ErrorText, Field, Loading, Notice, Title, useAction, useLoad } from '../components.tsx';
import { looksLikeEmail } from '../form-errors.ts';
import { reasonFor, usePermissions, useProject } from '../permissions.ts';

interface Contact {
  name: string;
  contactGroup: string;
  displayName: string;
  email: string;
  phoneNumber: string;
  hasProjectAccess: boolean;
}

interface ContactGroup {
  name: string;
  displayName: string;
  description: string;
  contactCount: number;
}

const CONTACT_FIELDS = {
  displayName: 'displayName',
  email: 'email',
  phoneNumber: 'phoneNumber',
  contactGroup: 'group',
};
const GROUP_FIELDS = { displayName: 'groupName', description: 'description' };

type ContactDraft = { displayName: string; email: string; phoneNumber: string; contactGroup: string };
const EMPTY_CONTACT: ContactDraft = { displayName: '', email: '', phoneNumber: '', contactGroup: '' };

function ContactForm({
  projectId,
  groups,
  editing,
  onSaved,
  onCancel,
}: {
  projectId: string;
  groups: ContactGroup[];
  editing: Contact | null;
  onSaved: () => void;
  onCancel: () => void;
}) {
  const [draft, setDraft] = useState<ContactDraft>(
    editing
      ? {
          displayName: editing.displayName,
          email: editing.email,
          phoneNumber: editing.phoneNumber,
          contactGroup: editing.contactGroup,
        }
      : EMPTY_CONTACT,
  );
  const action = useAction(CONTACT_FIELDS);
  const set = (patch: Partial<ContactDraft>) => setDraft({ ...draft, ...patch });
  return (
    <form
      class="row-form contact-form"
      aria-label={editing ? `Edit ${editing.displayName || editing.email}` : 'Add a contact'}
      ref={action.form}
      onInput={action.onInput}
      noValidate
      onSubmit={async (e) => {
        e.preventDefault();
        const email = draft.email.trim();
        if (!looksLikeEmail(email)) return action.fail('email', 'Enter an e-mail address, such as ada@example.com.');
        const body = { ...draft, email, phoneNumber: draft.phoneNumber.replace(/[\s-]/g, '') };
        const ok = await action.run(() =>
          editing
            ? api('PATCH', `/${editing.name}?update_mask=displayName,email,phoneNumber,contactGroup`, body)
            : api('POST', `/projects/${projectId}/contacts`, body),
        );
        if (ok) {
          if (!editing) setDraft(EMPTY_CONTACT);
          onSaved();
        }
      }}
    >
      <Field label="Name" error={action.fieldError('displayName')}>
        {(id, d, inv) => (
          <input
            id={id}
            name="displayName"
            aria-describedby={d}
            aria-invalid={inv}
            maxLength={256}
            value={draft.displayName}
            onInput={(e) => set({ displayName: (e.target as HTMLInputElement).value })}
          />
        )}
      </Field>
      <Field label="E-mail" error={action.fieldError('email')}>
        {(id, d, inv) => (
          <input
            id={id}
            name="email"
            type="email"
            aria-describedby={d}
            aria-invalid={inv}
            value={draft.email}
            onInput={(e) => set({ email: (e.target as HTMLInputElement).value })}
          />
        )}
      </Field>
      <Field label="Phone (optional)" error={action.fieldError('phoneNumber')}>
        {(id, d, inv) => (
          <input
            id={id}
            name="phoneNumber"
            type="tel"
            placeholder="+4798765432"
            aria-describedby={d}
            aria-invalid={inv}
            value={draft.phoneNumber}
            onInput={(e) => set({ phoneNumber: (e.target as HTMLInputElement).value })}
          />
        )}
      </Field>
      <Field label="Group" error={action.fieldError('group')}>
        {(id, d, inv) => (
          <select
            id={id}
            name="group"
            aria-describedby={d}
            aria-invalid={inv}
            value={draft.contactGroup}
            onChange={(e) => set({ contactGroup: (e.target as HTMLSelectElement).value })}
          >
            <option value="">No group</option>
            {groups.map((g) => (
              <option key={g.name} value={g.name}>
                {g.displayName}
              </option>
            ))}
          </select>
        )}
      </Field>
      <button type="submit" class="primary" disabled={action.busy}>
        {editing ? 'Save' : 'Add contact'}
      </button>
      {editing ? (
        <button type="button" onClick={onCancel}>
          Cancel
        </button>
      ) : null}
      <ErrorText error={action.error} />
    </form>
  );
}

function GroupForm({
  organization,
  editing,
  onSaved,
  onCancel,
}: {
  organization: string;
  editing: ContactGroup | null;
  onSaved: () => void;
  onCancel: () => void;
}) {
  const [displayName, setName] = useState(editing?.displayName ?? '');
  const [description, setDescription] = useState(editing?.description ?? '');
  const action = useAction(GROUP_FIELDS);
  return (
    <form
      class="row-form"
      aria-label={editing ? `Edit group ${editing.displayName}` : 'Add a contact group'}
      ref={action.form}
      onInput={action.onInput}
      noValidate
      onSubmit={async (e) => {
        e.preventDefault();
        if (displayName.trim() === '') return action.fail('groupName', 'Enter a name for the group.');
        const body = { displayName: displayName.trim(), description };
        const ok = await action.run(() =>
          editing
            ? api('PATCH', `/${editing.name}?update_mask=displayName,description`, body)
            : api('POST', `/${organization}/contactGroups`, body),
        );
        if (ok) {
          if (!editing) {
            setName('');
            setDescription('');
          }
          onSaved();
        }
      }}
    >
      <Field label="Group name" error={action.fieldError('groupName')}>
        {(id, d, inv) => (
          <input
            id={id}
            name="groupName"
            aria-describedby={d}
            aria-invalid={inv}
            maxLength={256}
            value={displayName}
            onInput={(e) => setName((e.target as HTMLInputElement).value)}
          />
        )}
      </Field>
      <Field label="Description" error={action.fieldError('description')}>
        {(id, d, inv) => (
          <input
            id={id}
            name="description"
            aria-describedby={d}
            aria-invalid={inv}
            maxLength={1024}
            value={description}
            onInput={(e) => setDescription((e.target as HTMLInputElement).value)}
          />
        )}
      </Field>
      <button type="submit" class="primary" disabled={action.busy}>
        {editing ? 'Save' : 'Add group'}
      </button>
      {editing ? (
        <button type="button" onClick={onCancel}>
          Cancel
        </button>
      ) : null}
      <ErrorText error={action.error} />
    </form>
  );
}

export function Contacts({ projectId }: { projectId: string }) {
  const project = useProject(projectId);
  const organization: string = project?.organization ?? '';
  const perms = usePermissions(`projects/${projectId}`);
  const orgPerms = usePermissions(organization || null);
  const canEditContacts = perms.has('device.update');
  const canEditGroups = orgPerms.has('organization.update');
  const contacts = useLoad(() => listAll<Contact>(`/projects/${projectId}/contacts`, 'contacts', 2), [projectId]);
  const groups = useLoad(
    async () => (organization ? listAll<ContactGroup>(`/${organization}/contactGroups`, 'contactGroups', 2) : null),
    [organization],
  );
  const [editingContact, setEditingContact] = useState<Contact | null>(null);
  const [editingGroup, setEditingGroup] = useState<ContactGroup | null>(null);
  const remove = useAction();
  const groupList = groups.data ?? [];
  const groupName = (name: string) => groupList.find((g) => g.name === name)?.displayName ?? idOf(name);
  const reloadBoth = () => {
    contacts.reload();
    groups.reload();
  };
  return (
    <section>
      <Title>Contacts</Title>
      <p class="muted">
        Whom a rule's e-mail can reach by group: an e-mail action that names a contact group mails the group's contacts
        in this project. Contacts need no account.
      </p>
      <ErrorText error={remove.error} />
      {remove.notice ? <Notice>{remove.notice}</Notice> : null}
      <section class="card" aria-labelledby="contacts-h">
        <h2 id="contacts-h">Contacts of this project</h2>
        <ErrorText error={contacts.error} />
        {!contacts.data ? (
          contacts.error ? null : (
            <Loading />
          )
        ) : contacts.data.length === 0 ? (
          <p class="muted">No contacts yet.</p>
        ) : (
          <div class="table-wrap">
            <table class="contacts stack-table">
              <thead>
                <tr>
                  <th scope="col">Name</th>
                  <th scope="col">E-mail</th>
                  <th scope="col">Phone</th>
                  <th scope="col">Group</th>
                  <th scope="col">
                    <span class="visually-hidden">Actions</span>
                  </th>
                </tr>
              </thead>
              <tbody>
                {contacts.data.map((c) => (
                  <tr key={c.name}>
                    <td class="stack-title">
                      <span class="strong">{c.displayName || c.email}</span>{' '}
                      {c.hasProjectAccess ? (
                        <Badge kind="info">
                          <span title="A user with this e-mail is a member of the project">member</span>
                        </Badge>
                      ) : null}
                    </td>
                    <td data-label="E-mail" class="break">
                      {c.email}
                    </td>
                    <td data-label="Phone">{c.phoneNumber || <span class="muted">—</span>}</td>
                    <td data-label="Group">
                      {c.contactGroup ? groupName(c.contactGroup) : <span class="muted">no group</span>}
                    </td>
                    <td class="actions">
                      {canEditContacts ? (
                        <>
                          <button
                            type="button"
                            aria-label={`Edit ${c.displayName || c.email}`}
                            onClick={() => setEditingContact(c)}
                          >
                            Edit
                          </button>
                          <ConfirmButton
                            label="Delete"
                            confirm={`Delete ${c.displayName || c.email}?`}
                            onConfirm={async () => {
                              if (await remove.run(() => api('DELETE', `/${c.name}`))) reloadBoth();
                            }}
                          />
                        </>
                      ) : null}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
        {canEditContacts ? (
          <>
            <h3 class="form-title">
              {editingContact ? `Edit ${editingContact.displayName || editingContact.email}` : 'Add a contact'}
            </h3>
            <ContactForm
              key={editingContact?.name ?? 'new'}
              projectId={projectId}
              groups={groupList}
              editing={editingContact}
              onSaved={() => {
                setEditingContact(null);
                reloadBoth();
              }}
              onCancel={() => setEditingContact(null)}
            />
          </>
        ) : perms.loaded ? (
          <p class="muted small">{reasonFor('device.update')} Changing contacts is not offered.</p>
        ) : null}
      </section>
      <section class="card" aria-labelledby="groups-h">
        <h2 id="groups-h">
          Contact groups{project?.organizationDisplayName ? ` of ${project.organizationDisplayName}` : ''}
        </h2>
        <p class="muted small">
          Groups belong to the organization: every project of it can use them, each with its own contacts. The count is
          the group's contacts in all of its projects.
        </p>
        <ErrorText error={groups.error} />
        {!groups.data ? (
          groups.error ? null : (
            <Loading />
          )
        ) : groups.data.length === 0 ? (
          <p class="muted">No contact groups yet.</p>
        ) : (
          <div class="table-wrap">
            <table class="contact-groups stack-table">
              <thead>
                <tr>
                  <th scope="col">Group</th>
                  <th scope="col">Description</th>
                  <th scope="col" class="num">
                    Contacts
                  </th>
                  <th scope="col">
                    <span class="visually-hidden">Actions</span>
                  </th>
                </tr>
              </thead>
              <tbody>
                {groups.data.map((g) => (
                  <tr key={g.name}>
                    <td class="stack-title strong">{g.displayName}</td>
                    <td data-label="Description">{g.description || <span class="muted">—</span>}</td>
                    <td data-label="Contacts" class="num">
                      {g.contactCount}
                    </td>
                    <td class="actions">
                      {canEditGroups ? (
                        <>
                          <button
                            type="button"
                            aria-label={`Edit group ${g.displayName}`}
                            onClick={() => setEditingGroup(g)}
                          >
                            Edit
                          </button>
                          <ConfirmButton
                            label="Delete"
                            confirm={`Delete ${g.displayName}? Its contacts stay, in no group.`}
                            onConfirm={async () => {
                              if (await remove.run(() => api('DELETE', `/${g.name}`))) reloadBoth();
                            }}
                          />
                        </>
                      ) : null}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
        {canEditGroups && organization ? (
          <>
            <h3 class="form-title">
              {editingGroup ? `Edit group ${editingGroup.displayName}` : 'Add a contact group'}
            </h3>
            <GroupForm
              key={editingGroup?.name ?? 'new'}
              organization={organization}
              editing={editingGroup}
              onSaved={() => {
                setEditingGroup(null);
                reloadBoth();
              }}
              onCancel={() => setEditingGroup(null)}
            />
          </>
        ) : orgPerms.loaded ? (
          <p class="muted small">{reasonFor('organization.update')} Changing contact groups is not offered.</p>
        ) : null}
      </section>
    </section>
  );
}
