/**
 * The flags of one member of a test etcd cluster on loopback (pure: no
 * process, no file); etcd-cluster.ts runs them.
 */

/** Where one member of a test cluster listens and keeps its data. */
export interface EtcdMemberSpec {
  /** The member's name, unique in the cluster, for example `m0`. */
  readonly name: string;
  /** The loopback port of its client URL. */
  readonly clientPort: number;
  /** The loopback port of its peer URL. */
  readonly peerPort: number;
  /** Its data directory (kept across a restart of the member). */
  readonly dataDir: string;
}

/** Raft timing of a test cluster, in milliseconds. */
export interface EtcdTiming {
  /** `--heartbeat-interval`. */
  readonly heartbeatMs: number;
  /** `--election-timeout`: how long followers wait for a heartbeat before electing a new leader. */
  readonly electionTimeoutMs: number;
}

/**
 * Raft timing for tests: a dead leader is replaced within about a second,
 * with etcd's own ratio (election timeout ten heartbeats) so that a loaded
 * 2-core machine does not trigger elections by itself.
 */
export const TEST_TIMING: EtcdTiming = { heartbeatMs: 100, electionTimeoutMs: 1_000 };

/** The client URL of `member`, for example `http://127.0.0.1:40123`. */
export function clientUrl(member: EtcdMemberSpec): string {
  return `http://127.0.0.1:${member.clientPort}`;
}

/** The peer URL of `member`. */
export function peerUrl(member: EtcdMemberSpec): string {
  return `http://127.0.0.1:${member.peerPort}`;
}

/** `--initial-cluster` of `members`: `name=peerURL` joined by commas, in the given order. */
export function initialCluster(members: readonly EtcdMemberSpec[]): string {
  return members.map((m) => `${m.name}=${peerUrl(m)}`).join(",");
}

/**
 * The etcd flags of `member` in a new cluster of `members` (which includes
 * it; throws a RangeError otherwise, or when names or ports repeat). The
 * same flags restart it on its data directory: etcd ignores the
 * `--initial-*` flags once the directory holds a member.
 */
export function memberArgs(
  member: EtcdMemberSpec,
  members: readonly EtcdMemberSpec[],
  timing: EtcdTiming = TEST_TIMING,
  token = "aether-test",
): string[] {
  if (!members.some((m) => m.name === member.name)) {
    throw new RangeError(`member ${member.name} is not in the cluster`);
  }
  if (new Set(members.map((m) => m.name)).size !== members.length) {
    throw new RangeError("member names repeat");
  }
  const ports = members.flatMap((m) => [m.clientPort, m.peerPort]);
  if (new Set(ports).size !== ports.length) throw new RangeError("member ports repeat");
  if (timing.electionTimeoutMs < 5 * timing.heartbeatMs) {
    throw new RangeError("the election timeout must be at least five heartbeats");
  }
  return [
    `--name=${member.name}`,
    `--data-dir=${member.dataDir}`,
    `--listen-client-urls=${clientUrl(member)}`,
    `--advertise-client-urls=${clientUrl(member)}`,
    `--listen-peer-urls=${peerUrl(member)}`,
    `--initial-advertise-peer-urls=${peerUrl(member)}`,
    `--initial-cluster=${initialCluster(members)}`,
    "--initial-cluster-state=new",
    `--initial-cluster-token=${token}`,
    `--heartbeat-interval=${timing.heartbeatMs}`,
    `--election-timeout=${timing.electionTimeoutMs}`,
    "--logger=zap",
    "--log-level=error",
  ];
}
