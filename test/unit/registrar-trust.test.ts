/**
 * The agent's trust state of its registrar connection (what `/readyz` and
 * the trust-failure metric report), and the interceptor that feeds it from
 * each call's outcome: table-driven, with a fake clock and fake calls.
 */
import { Code, ConnectError } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { createCallOutcomeInterceptor } from "../../clients/agent/call-outcome.js";
import { createRegistrarTrust } from "../../clients/agent/registrar-trust.js";
import { SvidRefusedError } from "../../services/runtime/tls/peer-svid.js";

const refused = new ConnectError(
  "refused",
  Code.Unavailable,
  undefined,
  undefined,
  new SvidRefusedError("unexpected_spiffe_id", "the peer is spiffe://hub.mesh/other"),
);
const denied = new ConnectError("caller spiffe://east.mesh/x denied", Code.PermissionDenied);
const unreachable = new ConnectError("connect ECONNREFUSED", Code.Unavailable);

describe("registrar trust", () => {
  it.each([
    { name: "nothing seen", steps: [], reason: undefined, counted: [] },
    { name: "a refusal", steps: [refused], reason: "unexpected_spiffe_id", counted: [true] },
    { name: "denied", steps: [denied], reason: "permission_denied", counted: [true] },
    { name: "unreachable says nothing", steps: [unreachable], reason: undefined, counted: [] },
    {
      name: "unreachable after a refusal keeps it",
      steps: [refused, unreachable],
      reason: "unexpected_spiffe_id",
      counted: [true],
    },
    {
      name: "the same refusal twice is new once",
      steps: [refused, refused],
      reason: "unexpected_spiffe_id",
      counted: [true, false],
    },
    { name: "a success clears it", steps: [refused, "ok"], reason: undefined, counted: [true] },
    {
      name: "then a denial",
      steps: [refused, "ok", denied],
      reason: "permission_denied",
      counted: [true, true],
    },
  ] as const)("$name", ({ steps, reason, counted }) => {
    let clock = 1_000;
    const seen: boolean[] = [];
    const trust = createRegistrarTrust({
      now: () => clock++,
      onFailure: (_failure, isNew) => seen.push(isNew),
    });
    for (const step of steps) {
      if (step === "ok") trust.succeeded();
      else trust.failed(step);
    }
    expect(trust.failure?.reason).toBe(reason);
    expect(seen).toEqual(counted);
    if (reason === undefined) expect(trust.notReadyReason()).toBeUndefined();
    else expect(trust.notReadyReason()).toContain(`(${reason})`);
  });

  it("keeps the time a failure was first seen while it repeats", () => {
    let clock = 0;
    const trust = createRegistrarTrust({ now: () => clock });
    trust.failed(refused);
    clock = 5_000;
    trust.failed(refused);
    expect(trust.failure?.since).toBe(0);
    expect(trust.notReadyReason()).toMatch(
      /since 1970-01-01T00:00:00\.000Z \(unexpected_spiffe_id\)/,
    );
  });
});

describe("call outcome interceptor", () => {
  const outcomes: string[] = [];
  const interceptor = createCallOutcomeInterceptor({
    succeeded: () => outcomes.push("ok"),
    failed: (error) => outcomes.push(ConnectError.from(error).rawMessage),
  });
  const request = (aborted = false) => {
    const controller = new AbortController();
    if (aborted) controller.abort();
    return { signal: controller.signal } as never;
  };

  it("reports an answered unary call, a failed one, and nothing for one the caller aborted", async () => {
    outcomes.length = 0;
    await interceptor(async () => ({ stream: false }) as never)(request());
    await expect(interceptor(async () => Promise.reject(denied))(request())).rejects.toBe(denied);
    await expect(interceptor(async () => Promise.reject(denied))(request(true))).rejects.toBe(
      denied,
    );
    expect(outcomes).toEqual(["ok", "caller spiffe://east.mesh/x denied"]);
  });

  it("reports each streamed message, and the stream's error", async () => {
    outcomes.length = 0;
    const response = await interceptor(
      async () =>
        ({
          stream: true,
          message: (async function* () {
            yield 1;
            throw denied;
          })(),
        }) as never,
    )(request());
    const received: unknown[] = [];
    await expect(
      (async () => {
        for await (const message of (response as { message: AsyncIterable<unknown> }).message) {
          received.push(message);
        }
      })(),
    ).rejects.toBe(denied);
    expect(received).toEqual([1]);
    expect(outcomes).toEqual(["ok", "caller spiffe://east.mesh/x denied"]);
  });
});
