import type { ReactNode } from 'react';
import { ConfirmButton } from '../../components/ConfirmButton';
import type { Me } from '../../lib/roles';
import { useDeploymentAction } from './hooks';
import { deploymentActions, shortId, type Deployment, type DeploymentAction } from './model';

interface ActionText {
  label: string;
  title: (what: string) => string;
  message: (d: Deployment) => ReactNode;
  danger?: boolean;
  reason?: { label: string; required?: boolean };
}

const TEXT: Record<DeploymentAction, ActionText> = {
  pause: {
    label: 'Pause',
    title: (w) => `Pause ${w}?`,
    message: () => 'The cluster step under way finishes and no new one starts until it is resumed. Health checks and automatic rollback go on.',
    reason: { label: 'Reason' },
  },
  resume: {
    label: 'Resume',
    title: (w) => `Resume ${w}?`,
    message: (d) => `It goes on from where it stopped${d.pausedBy ? ` (paused by ${d.pausedBy})` : ''}.`,
  },
  switch: {
    label: 'Switch to green',
    title: (w) => `Switch ${w} to green?`,
    message: () => 'Green takes over on every cluster once it is validated; blue stays as the instant rollback target for its retention time.',
  },
  cancel: {
    label: 'Cancel deployment',
    title: (w) => `Cancel ${w}?`,
    message: () => 'Installs in flight finish and no more start; the clusters keep what they run (roll back to undo it). A cancel cannot be undone.',
    danger: true,
  },
  rollback: {
    label: 'Roll back',
    title: (w) => `Roll back ${w}?`,
    message: rollbackMessage,
    danger: true,
    reason: { label: 'Reason' },
  },
};

function rollbackMessage(d: Deployment): ReactNode {
  const touched = (d.clusters ?? []).filter((c) => (c.helmRevision ?? 0) > 0 || (c.installAttempts ?? 0) > 0);
  return (
    <>
      <p>Every cluster it touched goes back to what it ran before:</p>
      {touched.length === 0 ? (
        <p className="muted">no cluster was installed yet: it only stops.</p>
      ) : (
        <ul>
          {touched.map((c) => (
            <li key={c.name}>
              {c.name}: {d.version} → {c.previousVersion ? `${c.previousVersion} (revision ${c.previousRevision})` : 'uninstalled (first install)'}
            </li>
          ))}
        </ul>
      )}
    </>
  );
}

/** The buttons the deployment's state and me's role allow, each asking first. */
export function Actions({ d, me }: { d: Deployment; me: Me | undefined }) {
  const act = useDeploymentAction(d.id ?? '');
  const actions = deploymentActions(d, me);
  if (actions.length === 0) return null;
  const what = `deployment ${shortId(d.id)} (${d.operator} ${d.version})`;
  return (
    <div className="toolbar deployment-actions" data-testid="deployment-actions" role="group" aria-label="Actions">
      {actions.map((a) => {
        const t = TEXT[a];
        return (
          <ConfirmButton
            key={a}
            label={t.label}
            title={t.title(what)}
            message={t.message(d)}
            danger={t.danger}
            reason={t.reason}
            testId={`action-${a}`}
            onConfirm={(reason) => act.mutateAsync({ action: a, reason })}
          />
        );
      })}
    </div>
  );
}
