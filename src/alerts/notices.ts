// What the rest of the service tells the alerts engine, and how it reaches the parts made later at start (the
// notifier): one port the composition root builds with the dependencies and attaches the notifier to once it runs.
// The services know it as `deps.alerts`; the evaluator, the timers and the connector-health trigger call it too.
import type { ConnectorHealthListener } from '../delivery/health.ts';
import type { AnnounceAlert } from './stream.ts';

export interface AlertNotices {
  /** Tells the event streams of a transition (after its commit). */
  announce: AnnounceAlert;
  /** Asks the notifier to send what was queued (after the commit). Nothing happens while no notifier runs here. */
  notify(): void;
  /** A user enabled a data connector again: its dataConnector alerts resolve. */
  connectorEnabled: ConnectorHealthListener['enabled'];
}

export interface AlertsPort extends AlertNotices {
  /** The running notifier's wake, or null when it stops. */
  attachNotifier(wake: (() => void) | null): void;
}

export function createAlertsPort(
  announce: AnnounceAlert,
  connectorEnabled: AlertNotices['connectorEnabled'],
): AlertsPort {
  let wake: (() => void) | null = null;
  return {
    announce,
    notify: () => wake?.(),
    connectorEnabled,
    attachNotifier(w) {
      wake = w;
    },
  };
}
