// :rotateSecret (extensions §X3): a new signature secret at once, the current one kept as the previous secret for an
// overlap during which every push is signed with both, so that the receivers of a connector can move to the new
// secret one by one with no push refused. The overlap's rules are in domain/secret-rotation.ts.
import type { Deps } from '../deps.ts';
import type { Principal } from '../auth/principal.ts';
import { badRequest } from '../domain/errors.ts';
import { dataConnectorName } from '../domain/names.ts';
import { parseOverlap, previousAfterRotation } from '../domain/secret-rotation.ts';
import { nowMicros } from '../runtime/clock.ts';
import { newSecret } from '../runtime/random.ts';
import type { DataConnectorRecord } from '../store/contract/connector-repos.ts';
import type { RotateSecretAnswer, RotateSecretBody } from '../wire/data-connectors.ts';
import { checkSecret, presentDataConnector, reload, requireConnector } from './data-connectors.ts';

export async function rotateSignatureSecret(
  deps: Deps,
  principal: Principal,
  projectId: string,
  connectorId: string,
  body: RotateSecretBody,
): Promise<RotateSecretAnswer> {
  await requireConnector(deps, principal, projectId, connectorId, 'dataconnector.update');
  // Validate everything before touching anything.
  const overlap = parseOverlap(body.overlap);
  let secret: string;
  if (body.signatureSecret === undefined) secret = newSecret(deps.random);
  else {
    secret = checkSecret(body.signatureSecret, 'signatureSecret');
    if (secret === '')
      throw badRequest(
        'signatureSecret must not be empty: leave it out to have one generated (to stop signing, PATCH httpConfig.signatureSecret to "")',
      );
  }

  const result = await deps.store.transaction(async (tx) => {
    const before = await reload(tx, projectId, connectorId);
    const current = before.signatureSecretSealed === '' ? '' : deps.secretBox.open(before.signatureSecretSealed);
    // The secret it has already (a retried call): nothing to rotate, and a running overlap stays as it is, so a retry
    // never puts the secret before out of the overlap.
    if (secret === current) return { view: presentDataConnector(deps, before, true), rotated: false };
    const now = nowMicros(deps);
    const next: DataConnectorRecord = {
      ...before,
      // The previous secret keeps the sealed value it had as the current one: sealed under the same master key.
      ...previousAfterRotation(before, overlap, now),
      signatureSecretSealed: deps.secretBox.seal(secret),
      updateTime: now,
    };
    await tx.dataConnectors.update(next);
    // The answer is built before the commit: if building it failed, nothing would be left behind.
    return { view: presentDataConnector(deps, next, true), rotated: true };
  });
  if (result.rotated)
    deps.logger.info(
      {
        connector: dataConnectorName(projectId, connectorId),
        by: `${principal.kind}:${principal.id}`,
        previousSecretUntil: result.view.httpConfig.previousSignatureSecretExpireTime,
      },
      'data connector signature secret rotated',
    );
  return { dataConnector: result.view, signatureSecret: secret };
}
