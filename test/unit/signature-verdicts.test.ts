/**
 * Each received value is verified once (`SignatureCheck.judgeValue`): the
 * agent re-resolves its whole imported state on every update, and with real
 * Ed25519 keys and a counting verifier N updates to one of M dependencies
 * cost M + N verifications, not M + N·(M + 1); a keys object that changes
 * judges everything again, so a removed key stops verifying what it
 * verified and an added key admits what it refused.
 */
import { describe, expect, it } from "vitest";
import type { ReceivedChange } from "../../clients/agent/follower/candidate-set.js";
import { createImportedState } from "../../clients/agent/follower/imported-state.js";
import type { ServiceConfigProjection } from "../../gen/aether/registry/v1/projection_pb.js";
import {
  createImportPolicy,
  type ImportCandidate,
  type ImportPolicy,
} from "../../services/common/import-policy.js";
import { createSignatureCheck, type ReceivedValue } from "../../services/common/signature-check.js";
import { type OriginKeys, verifyWithKey } from "../../services/signing/origin-keys.js";
import { captureLogger } from "../support/capture-logger.js";
import { makeProjection, versionAt } from "../support/projections.js";
import {
  newSigningKey,
  originKeysOf,
  signedProjection,
  signedValue,
} from "../support/signing-keys.js";

const hubKey = newSigningKey();
const spareKey = newSigningKey();
const HUB = originKeysOf({ hub: [hubKey] });

/** A required check over `keys()`, and how many signatures it verified. */
function countingCheck(keys: () => OriginKeys) {
  let verified = 0;
  const check = createSignatureCheck({
    keyring: keys,
    verify: (key, data, signature) => {
      verified += 1;
      return verifyWithKey(key, data, signature);
    },
    require: true,
  });
  return { check, verified: () => verified };
}

const signedPut = (service: string, n: number): ReceivedChange => ({
  kind: "put",
  origin: "hub",
  service,
  projection: signedProjection(
    makeProjection(service, { origin: "hub", version: versionAt(n) }),
    "hub",
    hubKey,
  ),
});

/**
 * The agent's path: the imported state, and on each update the whole state
 * resolved by the policy (as `agent.ts` does for its winners).
 */
function agentPath(policy: ImportPolicy, services: readonly string[]) {
  let winners = new Map<string, ImportCandidate>();
  const imported = createImportedState({
    policy,
    services,
    initial: undefined,
    logger: captureLogger().logger,
    onUpdate: (update) => {
      winners = policy.resolve(update.state.candidates.values()).winners;
    },
  });
  return { imported, winners: () => winners };
}

describe("signature verdicts: each received value is verified once", () => {
  const M = 12;
  const N = 8;
  const services = Array.from({ length: M }, (_, i) => `shop/s${String(i).padStart(2, "0")}`);

  /** A snapshot of M signed dependencies, then N streamed updates to the first. */
  function run(keys: () => OriginKeys) {
    const { check, verified } = countingCheck(keys);
    const agent = agentPath(createImportPolicy({ signatures: check }), services);
    agent.imported.synced(
      false,
      1n,
      services.map((s) => signedPut(s, 1)),
    );
    const afterSnapshot = verified();
    for (let n = 2; n <= N + 1; n++) {
      agent.imported.change(BigInt(n), signedPut(services[0] as string, n));
    }
    return { afterSnapshot, total: verified(), winners: agent.winners() };
  }

  it(`verifies ${M} values of a snapshot once, then one value per update: ${M} + ${N}`, () => {
    const { afterSnapshot, total, winners } = run(() => HUB);
    expect(afterSnapshot).toBe(M);
    expect(total).toBe(M + N);
    expect(winners.size).toBe(M);
    expect(winners.get(services[0] as string)?.projection.version).toBe(versionAt(N + 1));
  });

  it("a keys object that changes on every judgement re-verifies the whole state on every update (the cost without the memo)", () => {
    const { afterSnapshot, total, winners } = run(() => originKeysOf({ hub: [hubKey] }));
    // The snapshot: each value checked on receipt, then each again by the resolve.
    expect(afterSnapshot).toBe(2 * M);
    // Each update: the new value on receipt, then all M by the resolve.
    expect(total).toBe(2 * M + N * (M + 1));
    expect(winners.size).toBe(M);
  });
});

describe("signature verdicts: a change of keys judges again", () => {
  const projection = makeProjection("shop/cart", { origin: "hub", version: versionAt(1) });
  const received: Record<string, () => ReceivedValue> = {
    "a decoded projection": () => signedProjection(projection, "hub", hubKey),
    "the stored bytes": () => signedValue(projection, "hub", hubKey),
  };

  for (const [what, make] of Object.entries(received)) {
    it(`${what}: verified once per keys object; removed key: unknown_key; added back: verified`, () => {
      const value = make();
      let keys = HUB;
      const { check, verified } = countingCheck(() => keys);
      const judge = () => check.judgeValue("hub", "shop/cart", value);
      const steps: [OriginKeys | undefined, string, number][] = [
        [undefined, "verified", 1],
        [undefined, "verified", 1],
        // The key removed (another one listed): refused without verifying.
        [originKeysOf({ hub: [spareKey] }), "unknown_key", 1],
        [undefined, "unknown_key", 1],
        // Listed again (a new keys object, as a re-read file is): verified again.
        [originKeysOf({ hub: [spareKey, hubKey] }), "verified", 2],
        [undefined, "verified", 2],
        // The same key ids in a new object: judged again, still verified.
        [originKeysOf({ hub: [spareKey, hubKey] }), "verified", 3],
      ];
      for (const [next, outcome, count] of steps) {
        if (next !== undefined) keys = next;
        const verdict = judge();
        expect(verdict.kind === "rejected" ? verdict.reason : verdict.kind).toBe(outcome);
        expect(verified()).toBe(count);
      }
    });
  }

  it("a value refused under the keys in force is admitted once its key is added", () => {
    let keys = originKeysOf({ hub: [spareKey] });
    const { check, verified } = countingCheck(() => keys);
    const policy = createImportPolicy({ signatures: check });
    const candidate: ImportCandidate = {
      origin: "hub",
      service: "shop/cart",
      projection: signedProjection(projection, "hub", hubKey),
    };
    expect(policy.check(candidate)?.reason).toBe("unknown_key");
    expect(policy.check(candidate)?.reason).toBe("unknown_key");
    keys = originKeysOf({ hub: [spareKey, hubKey] });
    expect(policy.check(candidate)).toBeUndefined();
    expect(policy.check(candidate)).toBeUndefined();
    expect(verified()).toBe(1);
    keys = originKeysOf({ hub: [spareKey] });
    expect(policy.check(candidate)?.reason).toBe("unknown_key");
  });

  it("the same object under another origin or service is judged again", () => {
    const value: ServiceConfigProjection = signedProjection(projection, "hub", hubKey);
    const keys = originKeysOf({ hub: [hubKey], spoke: [hubKey] });
    const { check, verified } = countingCheck(() => keys);
    expect(check.judgeValue("hub", "shop/cart", value).kind).toBe("verified");
    // Signed for hub: under spoke the signed bytes differ.
    const spoke = check.judgeValue("spoke", "shop/cart", value);
    expect(spoke.kind === "rejected" && spoke.reason).toBe("bad_signature");
    expect(check.judgeValue("hub", "shop/cart", value).kind).toBe("verified");
    expect(check.judgeValue("hub", "shop/other", value).kind).toBe("verified");
    expect(verified()).toBe(4);
  });
});

describe("the winners among admitted candidates", () => {
  it("are ranked without judging again: a key removed since arrival revokes nothing held, while resolve would refuse it", () => {
    let keys = HUB;
    const { check, verified } = countingCheck(() => keys);
    const policy = createImportPolicy({ signatures: check });
    const candidate = (service: string, origin: string, n: number): ImportCandidate => {
      const projection = makeProjection(service, { origin, version: versionAt(n) });
      return { origin, service, projection: signedProjection(projection, origin, hubKey) };
    };
    const admitted = [candidate("shop/cart", "hub", 1), candidate("shop/pay", "hub", 2)];
    expect(policy.resolve(admitted).rejections).toEqual([]);
    const judged = verified();
    keys = originKeysOf({ hub: [spareKey] });
    const winners = policy.winners(admitted);
    expect([...winners.keys()]).toEqual(["shop/cart", "shop/pay"]);
    expect(winners.get("shop/pay")?.projection.version).toBe(versionAt(2));
    expect(verified()).toBe(judged);
    const resolved = policy.resolve(admitted);
    expect(resolved.winners.size).toBe(0);
    expect(resolved.rejections.map((r) => r.reason)).toEqual(["unknown_key", "unknown_key"]);
  });

  it("rank several origins of one service as resolve does", () => {
    const policy = createImportPolicy();
    const older = {
      origin: "east",
      service: "shop/cart",
      projection: makeProjection("shop/cart", { origin: "east", version: versionAt(1) }),
    };
    const newer = {
      origin: "west",
      service: "shop/cart",
      projection: makeProjection("shop/cart", { origin: "west", version: versionAt(2) }),
    };
    expect(policy.winners([older, newer]).get("shop/cart")?.origin).toBe("west");
    expect(policy.resolve([older, newer]).winners.get("shop/cart")?.origin).toBe("west");
  });
});
