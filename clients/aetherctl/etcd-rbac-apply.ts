/**
 * `aetherctl etcd-rbac --apply`: creates the roles and users of
 * etcd-rbac-plan.ts in a running etcd through its v3 auth API (the calls
 * `etcdctl role add`, `role grant-permission --prefix`, `user add
 * --no-password` and `user grant-role` make), so that each role ends with
 * exactly the planned permissions: a role or user that exists already is
 * kept, and a permission of the role that is not planned is revoked. Every
 * call has a deadline; nothing retries (the operator runs it again).
 */

import { noop } from "cockatiel";
import {
  Etcd3,
  EtcdRoleExistsError,
  EtcdUserExistsError,
  type IPermission,
  Permission,
} from "etcd3";
import { prefixEnd } from "../../services/runtime/etcd-key-range.js";
import { type EtcdSecurity, etcdSecurityOptions } from "../../services/runtime/etcd-security.js";
import type { ClusterRbac, EtcdKeyPermission } from "./etcd-rbac-plan.js";

/** Where {@link applyEtcdRbac} connects, and how long each call may take. */
export interface EtcdRbacTarget {
  /** The etcd client URLs. */
  readonly endpoints: readonly string[];
  /** TLS and credentials (root's, once auth is on); undefined for none. */
  readonly security: EtcdSecurity | undefined;
  /** The deadline of each call, in milliseconds. */
  readonly timeoutMs: number;
}

const PERMISSION_TYPE = { read: "Read", readwrite: "Readwrite" } as const;

/** The etcd permission of a planned one. */
function toEtcdPermission(permission: EtcdKeyPermission): IPermission {
  return {
    permType: PERMISSION_TYPE[permission.type],
    key: Buffer.from(permission.keyPrefix),
    range_end: prefixEnd(permission.keyPrefix),
  };
}

/** Whether two etcd permissions are the same grant. */
function samePermission(a: IPermission, b: IPermission): boolean {
  const type = (p: IPermission) =>
    typeof p.permType === "number" ? Permission[p.permType] : p.permType;
  return (
    type(a) === type(b) &&
    Buffer.from(a.key).equals(Buffer.from(b.key)) &&
    Buffer.from(a.range_end ?? []).equals(Buffer.from(b.range_end ?? []))
  );
}

/** Describes an etcd permission as etcdctl shows it, for the report. */
function describePermission(permission: IPermission): string {
  return `${String(permission.permType).toLowerCase()} [${Buffer.from(permission.key).toString("utf8")}, ${Buffer.from(permission.range_end ?? []).toString("utf8")})`;
}

/**
 * Creates every cluster's role and user of `plan` in the etcd of `target`,
 * reporting one line per change through `report`. Resolves when all are in
 * place; rejects with etcd's error (for example a permission denial when
 * auth is on and the credentials are not root's) at the first failed call.
 */
export async function applyEtcdRbac(
  target: EtcdRbacTarget,
  plan: readonly ClusterRbac[],
  report: (line: string) => void,
): Promise<void> {
  const client = new Etcd3({
    hosts: [...target.endpoints],
    ...etcdSecurityOptions(target.security),
    // One attempt per call within its deadline: no circuit breaker, no retry.
    faultHandling: { host: () => noop, global: noop },
  });
  const auth = client.auth;
  const options = () => ({ deadline: Date.now() + target.timeoutMs });
  try {
    for (const rbac of plan) {
      const created = await ignoring(EtcdRoleExistsError, () =>
        auth.roleAdd({ name: rbac.role }, options()),
      );
      report(`role ${rbac.role}: ${created ? "created" : "exists"}`);
      const wanted = rbac.permissions.map(toEtcdPermission);
      const { perm: current } = await auth.roleGet({ role: rbac.role }, options());
      for (const permission of current ?? []) {
        if (wanted.some((w) => samePermission(w, permission))) continue;
        await auth.roleRevokePermission(
          { role: rbac.role, key: permission.key, range_end: permission.range_end },
          options(),
        );
        report(`role ${rbac.role}: revoked ${describePermission(permission)}`);
      }
      for (const permission of wanted) {
        await auth.roleGrantPermission({ name: rbac.role, perm: permission }, options());
        report(`role ${rbac.role}: granted ${describePermission(permission)}`);
      }
      const userCreated = await ignoring(EtcdUserExistsError, () =>
        auth.userAdd({ name: rbac.user, options: { no_password: true } }, options()),
      );
      report(`user ${rbac.user}: ${userCreated ? "created without a password" : "exists"}`);
      await auth.userGrantRole({ user: rbac.user, role: rbac.role }, options());
      report(`user ${rbac.user}: role ${rbac.role} granted`);
    }
  } finally {
    client.close();
  }
}

/** Runs `call`; resolves true when it succeeded, false when it failed with `kind`. */
async function ignoring(
  kind: abstract new (...args: never[]) => Error,
  call: () => Promise<unknown>,
): Promise<boolean> {
  try {
    await call();
    return true;
  } catch (error) {
    if (error instanceof kind) return false;
    throw error;
  }
}
