/**
 * The status layout: every status key lies under its cluster's own subtree,
 * parses back to what made it, encodes services like projection keys do, and
 * anything else under `clusters/` is not a status key.
 */
import { describe, expect, it } from "vitest";
import {
  checkReplicaName,
  clusterStatusPrefix,
  parseStatusKey,
  replicaHeaderKey,
  replicaNameFromHost,
  serviceStatusKey,
} from "../../services/common/status-layout.js";
import { exportElectionName, originSubtreePrefix } from "../../services/common/store-layout.js";
import { encodeServiceSegment, projectionKey } from "../../services/registrar/store/store-key.js";

const P = "/aether/v1";

describe("status layout", () => {
  it.each(["shop/cart", "@mesh", "ns/ünïcode-name", "a/b?c"])(
    "keys %s under the cluster's subtree and parses it back",
    (service) => {
      const key = serviceStatusKey(P, "east", "registrar-0", service);
      expect(key.startsWith(clusterStatusPrefix(P, "east"))).toBe(true);
      expect(key.startsWith(originSubtreePrefix(P, "east"))).toBe(true);
      expect(key.endsWith(`/services/${encodeServiceSegment(service)}`)).toBe(true);
      expect(parseStatusKey(P, key)).toEqual({
        kind: "service",
        cluster: "east",
        replica: "registrar-0",
        service,
      });
    },
  );

  it("parses a replica header key", () => {
    const key = replicaHeaderKey(P, "west", "node-1.example");
    expect(key).toBe(`${P}/clusters/west/status/node-1.example/replica`);
    expect(parseStatusKey(P, key)).toEqual({
      kind: "replica",
      cluster: "west",
      replica: "node-1.example",
    });
  });

  it.each([
    ["a projection key", projectionKey(P, "east", "shop/cart")],
    ["an election key", `${exportElectionName(P, "east")}/694d`],
    ["another prefix", replicaHeaderKey("/other", "east", "r")],
    ["a bad replica name", `${P}/clusters/east/status/Bad_Name/replica`],
    ["an unknown leaf", `${P}/clusters/east/status/r/other`],
    ["a non-canonical segment", `${P}/clusters/east/status/r/services/c2hvcC9jYXJ0=`],
    ["a segment that is not UTF-8", `${P}/clusters/east/status/r/services/_w`],
    ["a deeper key", `${serviceStatusKey(P, "east", "r", "a/b")}/x`],
    ["an empty cluster", `${P}/clusters//status/r/replica`],
  ])("refuses %s", (_what, key) => {
    expect(parseStatusKey(P, key)).toBeUndefined();
  });

  it.each([
    ["registrar-0", true],
    ["a", true],
    ["node.example.com", true],
    ["-lead", false],
    ["trail.", false],
    ["UPPER", false],
    ["", false],
    ["x".repeat(63), true],
    ["x".repeat(64), false],
  ])("replica name %j valid: %s", (name, valid) => {
    expect(checkReplicaName(name) === undefined).toBe(valid);
  });

  it.each([
    ["Registrar-Pod_7", "registrar-pod-7"],
    ["--", "registrar"],
    [`${"h".repeat(70)}`, "h".repeat(63)],
    [".host.", "host"],
  ])("turns host %j into replica name %j", (host, name) => {
    expect(replicaNameFromHost(host)).toBe(name);
    expect(checkReplicaName(replicaNameFromHost(host))).toBeUndefined();
  });
});
