import { describe, expect, it } from "vitest";
import {
  type EtcdMemberSpec,
  initialCluster,
  memberArgs,
  TEST_TIMING,
} from "../support/etcd-cluster-flags.js";

const m = (i: number, over: Partial<EtcdMemberSpec> = {}): EtcdMemberSpec => ({
  name: `m${i}`,
  clientPort: 40_000 + i,
  peerPort: 41_000 + i,
  dataDir: `/tmp/d${i}`,
  ...over,
});
const three = [m(0), m(1), m(2)];

describe("etcd cluster flags", () => {
  it.each([
    [[m(0)], "m0=http://127.0.0.1:41000"],
    [three, "m0=http://127.0.0.1:41000,m1=http://127.0.0.1:41001,m2=http://127.0.0.1:41002"],
  ])("--initial-cluster of %j is %s", (members, expected) => {
    expect(initialCluster(members)).toBe(expected);
  });

  it("a member's flags: its own URLs and data dir, every peer, a new cluster, the test timing", () => {
    expect(memberArgs(m(1), three)).toEqual([
      "--name=m1",
      "--data-dir=/tmp/d1",
      "--listen-client-urls=http://127.0.0.1:40001",
      "--advertise-client-urls=http://127.0.0.1:40001",
      "--listen-peer-urls=http://127.0.0.1:41001",
      "--initial-advertise-peer-urls=http://127.0.0.1:41001",
      `--initial-cluster=${initialCluster(three)}`,
      "--initial-cluster-state=new",
      "--initial-cluster-token=aether-test",
      `--heartbeat-interval=${TEST_TIMING.heartbeatMs}`,
      `--election-timeout=${TEST_TIMING.electionTimeoutMs}`,
      "--logger=zap",
      "--log-level=error",
    ]);
  });

  it.each([
    ["a member outside the cluster", m(3), three, TEST_TIMING, /not in the cluster/],
    ["repeated names", m(0), [m(0), m(1, { name: "m0" })], TEST_TIMING, /names repeat/],
    [
      "a peer port reused as a client port",
      m(0),
      [m(0), m(1, { clientPort: 41_000 })],
      TEST_TIMING,
      /ports repeat/,
    ],
    [
      "an election timeout under five heartbeats",
      m(0),
      three,
      { heartbeatMs: 100, electionTimeoutMs: 400 },
      /five heartbeats/,
    ],
  ] as const)("refuses %s", (_, member, members, timing, error) => {
    expect(() => memberArgs(member, members, timing)).toThrow(error);
  });
});
