// The console shell: top bar (project picker, who is signed in, sign-out), the project's sections, and the
// screen for the URL. Signed-out visitors are sent to /signin by the first API call that answers 401.
import type { ComponentChildren } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { useOpenAlertCount } from './alert-stream.ts';
import { idOf, listAll } from './api.ts';
import { Loading } from './components.tsx';
import { clearPermissions } from './permissions.ts';
import { match, navigate, onLinkClick, useLocation } from './router.ts';
import { signedInEmail, signOut } from './session.ts';
import { ApiReference } from './screens/api-reference.tsx';
import { ConnectorPage } from './screens/connector.tsx';
import { ConnectorForm } from './screens/connector-form.tsx';
import { Connectors } from './screens/connectors.tsx';
import { DevicePage } from './screens/device.tsx';
import { Devices } from './screens/devices.tsx';
import { Emulator } from './screens/emulator.tsx';
import { Invite } from './screens/invite.tsx';
import { LiveEvents } from './screens/live.tsx';
import { Members, OrganizationMembers } from './screens/members.tsx';
import { Projects } from './screens/projects.tsx';
import { ServiceAccountPage } from './screens/service-account.tsx';
import { ServiceAccounts } from './screens/service-accounts.tsx';
import { SignIn } from './screens/signin.tsx';

const SECTIONS: [string, string][] = [
  ['devices', 'Devices'],
  ['emulator', 'Emulator'],
  ['live', 'Live events'],
  ['alerts', 'Alerts'],
  ['rules', 'Rules'],
  ['contacts', 'Contacts'],
  ['dataconnectors', 'Data connectors'],
  ['serviceaccounts', 'Service accounts'],
  ['members', 'Members'],
];

type Screen = (params: Record<string, string>) => ComponentChildren;

const loadDeliveryScreens = () => import('./screens/delivery-screens.ts');
const loadAlertScreens = () => import('./screens/alert-screens.ts');
type AlertScreens = Awaited<ReturnType<typeof loadAlertScreens>>;
/** A screen of the rules, alerts and contacts chunk. */
const alertScreen = (render: (m: AlertScreens) => ComponentChildren) => (
  <LazyScreen load={loadAlertScreens} render={render} />
);

/** A screen whose code is loaded when it is first shown (import() caches the module). */
function LazyScreen<M>({ load, render }: { load: () => Promise<M>; render: (module: M) => ComponentChildren }) {
  const [module, setModule] = useState<M | null>(null);
  const [failed, setFailed] = useState(false);
  useEffect(() => {
    let live = true;
    load().then(
      (m) => live && setModule(() => m),
      () => live && setFailed(true),
    );
    return () => void (live = false);
  }, [load]);
  if (failed)
    return (
      <p class="error" role="alert">
        This page could not be loaded (the service may have been updated meanwhile): reload the page.
      </p>
    );
  return module ? render(module) : <Loading />;
}
const ROUTES: [string, Screen][] = [
  ['/', () => <Projects />],
  ['/organizations/:o/members', (p) => <OrganizationMembers organizationId={p.o!} />],
  ['/docs/api', () => <ApiReference />],
  ['/projects/:p/devices', (p) => <Devices projectId={p.p!} />],
  ['/projects/:p/devices/:d', (p) => <DevicePage projectId={p.p!} deviceId={p.d!} />],
  ['/projects/:p/emulator', (p) => <Emulator projectId={p.p!} />],
  ['/projects/:p/live', (p) => <LiveEvents projectId={p.p!} />],
  ['/projects/:p/dataconnectors', (p) => <Connectors projectId={p.p!} />],
  ['/projects/:p/dataconnectors/new', (p) => <ConnectorForm projectId={p.p!} />],
  ['/projects/:p/dataconnectors/:dc', (p) => <ConnectorPage projectId={p.p!} connectorId={p.dc!} />],
  ['/projects/:p/dataconnectors/:dc/edit', (p) => <ConnectorForm projectId={p.p!} connectorId={p.dc!} />],
  [
    '/projects/:p/dataconnectors/:dc/deliveries',
    (p) => (
      <LazyScreen load={loadDeliveryScreens} render={(m) => <m.Deliveries projectId={p.p!} connectorId={p.dc!} />} />
    ),
  ],
  [
    '/projects/:p/dataconnectors/:dc/deliveries/:id',
    (p) => (
      <LazyScreen
        load={loadDeliveryScreens}
        render={(m) => <m.DeliveryPage projectId={p.p!} connectorId={p.dc!} deliveryId={p.id!} />}
      />
    ),
  ],
  ['/projects/:p/alerts', (p) => alertScreen((m) => <m.Alerts projectId={p.p!} />)],
  ['/projects/:p/alerts/:a', (p) => alertScreen((m) => <m.AlertPage projectId={p.p!} alertId={p.a!} />)],
  ['/projects/:p/rules', (p) => alertScreen((m) => <m.Rules projectId={p.p!} />)],
  ['/projects/:p/rules/new', (p) => alertScreen((m) => <m.RuleForm projectId={p.p!} />)],
  ['/projects/:p/rules/:r', (p) => alertScreen((m) => <m.RulePage projectId={p.p!} ruleId={p.r!} />)],
  ['/projects/:p/rules/:r/edit', (p) => alertScreen((m) => <m.RuleForm projectId={p.p!} ruleId={p.r!} />)],
  ['/projects/:p/contacts', (p) => alertScreen((m) => <m.Contacts projectId={p.p!} />)],
  ['/projects/:p/serviceaccounts', (p) => <ServiceAccounts projectId={p.p!} />],
  ['/projects/:p/serviceaccounts/:sa', (p) => <ServiceAccountPage projectId={p.p!} serviceAccountId={p.sa!} />],
  ['/projects/:p/members', (p) => <Members projectId={p.p!} />],
];

function ProjectPicker({ projectId, section }: { projectId: string | null; section: string }) {
  const [projects, setProjects] = useState<any[]>([]);
  useEffect(() => {
    listAll<any>('/projects', 'projects', 2).then(setProjects, () => undefined);
  }, [projectId]);
  if (projects.length === 0) return null;
  return (
    <label class="picker">
      <span class="visually-hidden">Project</span>
      <select
        value={projectId ?? ''}
        onChange={(e) => {
          const id = (e.target as HTMLSelectElement).value;
          navigate(id ? `/projects/${id}/${section || 'devices'}` : '/');
        }}
      >
        <option value="">All projects</option>
        {projects.map((p) => (
          <option key={p.name} value={idOf(p.name)}>
            {p.displayName}
          </option>
        ))}
      </select>
    </label>
  );
}

function TopBar({ projectId, section }: { projectId: string | null; section: string }) {
  const email = signedInEmail();
  return (
    <header class="topbar">
      <a class="skip" href="#main">
        Skip to content
      </a>
      <a class="brand" href="/">
        Sensor Cloud
      </a>
      <ProjectPicker projectId={projectId} section={section} />
      <span class="spacer" />
      <a class="toplink" href="/docs/api">
        API reference
      </a>
      {email ? (
        <span class="who" title="Signed in">
          {email}
        </span>
      ) : null}
      <button
        type="button"
        class="link"
        onClick={async () => {
          await signOut();
          clearPermissions();
          navigate('/signin', { replace: true });
        }}
      >
        Sign out
      </button>
    </header>
  );
}

/** The project's sections; Alerts carries the number of open alerts (TRIGGERED or ACKNOWLEDGED), kept live. */
function SideNav({ projectId, section }: { projectId: string; section: string }) {
  const open = useOpenAlertCount(projectId);
  return (
    <nav class="sidenav" aria-label="Project sections">
      <a href="/" class="back">
        ← Projects
      </a>
      {SECTIONS.map(([key, label]) => (
        <a key={key} href={`/projects/${projectId}/${key}`} aria-current={section === key ? 'page' : undefined}>
          {label}
          {key === 'alerts' && open !== null && open > 0 ? (
            <>
              <span class="nav-count" data-testid="open-alerts" aria-hidden="true">
                {open}
              </span>
              <span class="visually-hidden">, {open} open</span>
            </>
          ) : null}
        </a>
      ))}
    </nav>
  );
}

/** Replaces the URL after render (navigating during a render would update other components mid-render). */
function Redirect({ to }: { to: string }) {
  useEffect(() => navigate(to, { replace: true }), [to]);
  return null;
}

function NotFound() {
  return (
    <section>
      <h1>Page not found</h1>
      <p>
        There is no console page at this address. <a href="/">Go to your projects</a>.
      </p>
    </section>
  );
}

export function App() {
  const { path } = useLocation();
  useEffect(() => {
    document.addEventListener('click', onLinkClick);
    return () => document.removeEventListener('click', onLinkClick);
  }, []);

  if (path === '/signin') return <SignIn />;
  const invite = match('/invite/:token', path);
  if (invite) return <Invite token={invite.token!} />;

  const projectRoot = match('/projects/:p', path);
  if (projectRoot) return <Redirect to={`/projects/${projectRoot.p}/devices`} />;
  let screen: ComponentChildren = <NotFound />;
  for (const [pattern, render] of ROUTES) {
    const params = match(pattern, path);
    if (params) {
      screen = render(params);
      break;
    }
  }
  const projectMatch = /^\/projects\/([^/]+)(?:\/([^/]+))?/.exec(path);
  const projectId = projectMatch ? decodeURIComponent(projectMatch[1]!) : null;
  const section = projectMatch?.[2] ?? '';
  return (
    <>
      <TopBar projectId={projectId} section={section} />
      <div class={projectId ? 'layout with-nav' : 'layout'}>
        {projectId ? <SideNav projectId={projectId} section={section} /> : null}
        <main id="main" tabIndex={-1}>
          {screen}
        </main>
      </div>
    </>
  );
}
