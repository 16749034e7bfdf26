/**
 * A real 3-member (or n-member) etcd cluster on loopback for fault tests:
 * started on free ports with temp data directories, and per member a crash
 * (kill -9) and restart on the same data, a freeze (SIGSTOP) and thaw; the
 * cluster's leader, and compaction. Every process is tracked (etcd.ts's exit
 * hook kills what a failed test left behind), and {@link EtcdCluster.stop}
 * removes everything.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Etcd3 } from "etcd3";
import {
  etcdBinary,
  freePort,
  isHealthy,
  isStopped,
  killEtcdProcess,
  trackEtcdProcess,
} from "./etcd.js";
import {
  clientUrl,
  type EtcdMemberSpec,
  type EtcdTiming,
  memberArgs,
  TEST_TIMING,
} from "./etcd-cluster-flags.js";
import { waitFor } from "./wait.js";

/** One member of an {@link EtcdCluster}. */
export interface EtcdMember {
  /** Its name, `m0`, `m1`, …. */
  readonly name: string;
  /** Its client URL. */
  readonly endpoint: string;
  /** Its OS process id while it runs; undefined once killed. */
  readonly pid: number | undefined;
  /** Kills it with SIGKILL (a crash; works on a frozen member too) and waits for it to exit. */
  kill(): Promise<void>;
  /**
   * Starts a killed member again on its ports and data directory; resolves
   * once it is healthy (which needs a quorum of members running).
   */
  start(): Promise<void>;
  /** {@link EtcdMember.kill}, then {@link EtcdMember.start}. */
  restart(): Promise<void>;
  /** Freezes it with SIGSTOP and resolves once every thread has stopped (connections stay open). */
  freeze(): Promise<void>;
  /** Thaws a frozen member with SIGCONT and resolves once it runs. */
  thaw(): Promise<void>;
}

/** A running cluster started by {@link startEtcdCluster}. */
export interface EtcdCluster {
  /** The members, in `--initial-cluster` order. */
  readonly members: readonly EtcdMember[];
  /** Every client URL, in member order. */
  readonly endpoints: readonly string[];
  /** The client URLs joined by commas, as `--etcd-endpoints` takes them. */
  readonly endpointList: string;
  /**
   * A raw client of every member (etcd3's high-level API), for test writes
   * and assertions; each unary call has a 2 s deadline (a frozen member
   * would hold it forever), and etcd3 retries it on another member.
   */
  readonly raw: Etcd3;
  /**
   * Resolves with the member that leads, as the running, unfrozen members
   * agree; waits (up to `timeoutMs`) until one does.
   */
  leader(timeoutMs?: number): Promise<EtcdMember>;
  /** Waits until every member is healthy (running, with a leader and quorum). */
  waitHealthy(timeoutMs?: number): Promise<void>;
  /**
   * Compacts the key-value history up to `revision` (default the current
   * revision), physically (the call returns once the members dropped it);
   * resolves with the revision compacted at.
   */
  compact(revision?: number): Promise<number>;
  /** Kills every member (frozen ones too) and removes the data directories. Idempotent. */
  stop(): Promise<void>;
}

/** Options of {@link startEtcdCluster}. */
export interface EtcdClusterOptions {
  /** How many members; default 3. */
  readonly size?: number;
  /** Raft timing; default {@link TEST_TIMING}. */
  readonly timing?: EtcdTiming;
  /** The etcd binary; default as etcd.ts's `etcdBinary`. */
  readonly binary?: string;
  /** How long a member may take to become healthy; default 20 s. */
  readonly readyTimeoutMs?: number;
}

/** The deadline of every unary call of {@link EtcdCluster.raw}, in milliseconds. */
const RAW_DEADLINE_MS = 2_000;

/** A member's status as its maintenance API reports it. */
async function memberStatus(
  endpoint: string,
): Promise<{ memberId: string; leader: string } | undefined> {
  const client = new Etcd3({ hosts: endpoint });
  try {
    const status = await client.maintenance.status({ deadline: Date.now() + 1_000 });
    return { memberId: status.header.member_id, leader: status.leader };
  } catch {
    return undefined;
  } finally {
    client.close();
  }
}

/**
 * Starts a real etcd cluster of `options.size` members (default 3) on free
 * loopback ports, each with a fresh data directory, and resolves once every
 * member is healthy. Throws, after cleaning up, when a member exits or the
 * cluster is not healthy in time. Callers stop it in `afterAll`.
 */
export async function startEtcdCluster(options: EtcdClusterOptions = {}): Promise<EtcdCluster> {
  const binary = etcdBinary(options.binary);
  const readyTimeoutMs = options.readyTimeoutMs ?? 20_000;
  const specs: EtcdMemberSpec[] = [];
  for (let i = 0; i < (options.size ?? 3); i++) {
    const dataDir = await mkdtemp(join(tmpdir(), `aether-etcd-m${i}-`));
    specs.push({
      name: `m${i}`,
      clientPort: await freePort(),
      peerPort: await freePort(),
      dataDir,
    });
  }
  const members = specs.map((spec) =>
    createMember(
      binary,
      spec,
      memberArgs(spec, specs, options.timing ?? TEST_TIMING),
      readyTimeoutMs,
    ),
  );
  const endpoints = specs.map(clientUrl);
  let raw: Etcd3 | undefined;
  let stopped = false;
  const stop = async (): Promise<void> => {
    if (stopped) return;
    stopped = true;
    raw?.close();
    await Promise.all(members.map((m) => m.kill()));
    await Promise.all(specs.map((s) => rm(s.dataDir, { recursive: true, force: true })));
  };
  try {
    await Promise.all(members.map((m) => m.start()));
  } catch (error) {
    await stop();
    throw error;
  }
  raw = new Etcd3({
    hosts: [...endpoints],
    // A frozen member never answers: a deadline lets a call fail and the next try another member.
    defaultCallOptions: (context) =>
      context.isStream ? {} : { deadline: Date.now() + RAW_DEADLINE_MS },
  });
  const client = raw;

  return {
    members,
    endpoints,
    endpointList: endpoints.join(","),
    raw: client,
    async leader(timeoutMs = 10_000) {
      let found: EtcdMember | undefined;
      await waitFor(
        async () => {
          const statuses = await Promise.all(members.map((m) => memberStatus(m.endpoint)));
          const known = statuses.filter((s) => s !== undefined && s.leader !== "0");
          const leaders = new Set(known.map((s) => s?.leader));
          if (leaders.size !== 1) return false;
          const index = statuses.findIndex((s) => s !== undefined && s.memberId === s.leader);
          found = members[index];
          return found !== undefined;
        },
        timeoutMs,
        "the etcd cluster to agree on a leader",
        50,
      );
      return found as EtcdMember;
    },
    waitHealthy: (timeoutMs = readyTimeoutMs) =>
      waitFor(
        async () => (await Promise.all(endpoints.map(isHealthy))).every(Boolean),
        timeoutMs,
        "every etcd member to be healthy",
        50,
      ),
    async compact(revision) {
      const at =
        revision ??
        Number(
          (await client.kv.range({ key: Buffer.from("/"), count_only: true })).header.revision,
        );
      await client.kv.compact({ revision: String(at), physical: true });
      return at;
    },
    stop,
  };
}

/** One member's process handling: spawn on its flags, crash, restart, freeze and thaw. */
function createMember(
  binary: string,
  spec: EtcdMemberSpec,
  args: readonly string[],
  readyTimeoutMs: number,
): EtcdMember {
  const endpoint = clientUrl(spec);
  let child: ChildProcess | undefined;
  let output = "";
  const alive = (c: ChildProcess | undefined): c is ChildProcess =>
    c !== undefined && c.exitCode === null && c.signalCode === null;

  const kill = async (): Promise<void> => {
    if (child !== undefined) await killEtcdProcess(child);
    child = undefined;
  };
  const start = async (): Promise<void> => {
    if (alive(child)) throw new Error(`etcd member ${spec.name} is already running`);
    output = "";
    const started = spawn(binary, args, { stdio: ["ignore", "pipe", "pipe"] });
    child = started;
    trackEtcdProcess(started);
    const keep = (chunk: Buffer) => {
      output = (output + chunk.toString("utf8")).slice(-4_000);
    };
    started.stdout?.on("data", keep);
    started.stderr?.on("data", keep);
    started.on("error", (error) => {
      output += `\nspawn error: ${error.message}`;
    });
    try {
      await waitFor(
        async () => !alive(started) || (await isHealthy(endpoint)),
        readyTimeoutMs,
        `etcd member ${spec.name} at ${endpoint} to become healthy`,
        50,
      );
      if (!alive(started)) throw new Error(`etcd member ${spec.name} exited`);
    } catch (error) {
      await kill();
      throw new Error(`etcd member ${spec.name} did not start: ${String(error)}\n${output}`, {
        cause: error,
      });
    }
  };
  const signal = async (name: "SIGSTOP" | "SIGCONT"): Promise<void> => {
    const pid = child?.pid;
    if (!alive(child) || pid === undefined)
      throw new Error(`etcd member ${spec.name} is not running`);
    child.kill(name);
    const stopped = name === "SIGSTOP";
    await waitFor(
      async () => (await isStopped(pid)) === stopped,
      5_000,
      `etcd member ${spec.name} to ${stopped ? "stop" : "continue"}`,
      1,
    );
  };
  return {
    name: spec.name,
    endpoint,
    get pid() {
      return alive(child) ? child.pid : undefined;
    },
    kill,
    start,
    async restart() {
      await kill();
      await start();
    },
    freeze: () => signal("SIGSTOP"),
    thaw: () => signal("SIGCONT"),
  };
}
