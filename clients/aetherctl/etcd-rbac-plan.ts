/**
 * What `aetherctl etcd-rbac` creates, decided without etcd: per cluster an
 * etcd role and a user, both `aether-<cluster>`, the role granting read on
 * the whole store prefix (`<prefix>/`: every origin's projections, the
 * store's revision, the old election name a rolling upgrade waits on) and
 * read-write on the cluster's own subtree (`<prefix>/clusters/<cluster>/`:
 * its projections and its export election) and nothing else; and the
 * `etcdctl` commands that create them, ready to paste. Pure.
 */
import { originSubtreePrefix, storeKeyPrefix } from "../../services/common/store-layout.js";

/** One permission of a role: a type over every key starting with `keyPrefix`. */
export interface EtcdKeyPermission {
  /** `read` or `readwrite` (etcd's `Read` and `Readwrite`). */
  readonly type: "read" | "readwrite";
  /** The key prefix the permission covers (etcd's key to the prefix's range end). */
  readonly keyPrefix: string;
}

/** The role and user of one cluster's registrar. */
export interface ClusterRbac {
  /** The cluster (origin) name. */
  readonly cluster: string;
  /** The etcd role: `aether-<cluster>`. */
  readonly role: string;
  /** The etcd user, the client certificate's CN: `aether-<cluster>`. */
  readonly user: string;
  /** Exactly the role's permissions. */
  readonly permissions: readonly EtcdKeyPermission[];
}

/** Returns the etcd role and user name of a cluster's registrar: `aether-<cluster>`. */
export function etcdRbacName(cluster: string): string {
  return `aether-${cluster}`;
}

/**
 * Returns the role and user of each cluster, in the order given, for a
 * normalized store `prefix` (see `normalizePrefix`).
 */
export function planEtcdRbac(prefix: string, clusters: readonly string[]): ClusterRbac[] {
  return clusters.map((cluster) => ({
    cluster,
    role: etcdRbacName(cluster),
    user: etcdRbacName(cluster),
    permissions: [
      { type: "read", keyPrefix: storeKeyPrefix(prefix) },
      { type: "readwrite", keyPrefix: originSubtreePrefix(prefix, cluster) },
    ],
  }));
}

/** Quotes `word` for a POSIX shell when it holds anything but safe characters. */
export function shellQuote(word: string): string {
  return /^[A-Za-z0-9_@%+=:,./-]+$/.test(word) ? word : `'${word.replaceAll("'", `'"'"'`)}'`;
}

/** Returns the `etcdctl` commands (API v3) that create one cluster's role and user. */
export function etcdctlCommands(rbac: ClusterRbac): string[] {
  const role = shellQuote(rbac.role);
  const user = shellQuote(rbac.user);
  return [
    `etcdctl role add ${role}`,
    ...rbac.permissions.map(
      (permission) =>
        `etcdctl role grant-permission ${role} --prefix=true ${permission.type} ${shellQuote(permission.keyPrefix)}`,
    ),
    `etcdctl user add ${user} --no-password`,
    `etcdctl user grant-role ${user} ${role}`,
  ];
}

/**
 * Returns the script `aetherctl etcd-rbac` prints: a comment saying what it
 * grants, then each cluster's commands under a comment naming the cluster.
 */
export function formatEtcdRbacScript(prefix: string, plan: readonly ClusterRbac[]): string {
  const lines = [
    `# etcd roles and users of the aether registrars under ${prefix}/ (aetherctl etcd-rbac).`,
    `# Each cluster's registrar may read ${prefix}/ and write ${prefix}/clusters/<cluster>/ only.`,
    "# The users have no password: with etcd's --client-cert-auth, a registrar's client",
    "# certificate with CN aether-<cluster> signs it in. Run with ETCDCTL_API=3 and root's",
    "# credentials once auth is on; enabling auth (etcdctl auth enable) is a separate step.",
  ];
  for (const rbac of plan) {
    lines.push("", `# cluster ${rbac.cluster}`, ...etcdctlCommands(rbac));
  }
  return `${lines.join("\n")}\n`;
}
