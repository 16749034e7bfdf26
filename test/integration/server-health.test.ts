import { Code, ConnectError, createClient, createRouterTransport } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { Health, HealthCheckResponse_ServingStatus } from "../../gen/grpc/health/v1/health_pb.js";
import {
  createHealthService,
  type HealthServiceOptions,
  type HealthStatus,
} from "../../services/registrar/server/health-service.js";
import { waitFor } from "../support/wait.js";

const { SERVING, NOT_SERVING, SERVICE_UNKNOWN } = HealthCheckResponse_ServingStatus;

/** A health service over a mutable status map, behind an in-memory transport. */
function setup(options: Partial<HealthServiceOptions> = {}) {
  const statuses = new Map<string, HealthStatus>([["", SERVING]]);
  const drain = new AbortController();
  const health = createHealthService({
    status: (name) => statuses.get(name),
    drainSignal: drain.signal,
    ...options,
  });
  const client = createClient(
    Health,
    createRouterTransport((router) => {
      router.service(Health, health.implementation);
    }),
  );
  return { statuses, drain, health, client };
}

/** Reads a Watch stream in the background, recording its messages and its outcome. */
function record(stream: AsyncIterable<{ status: HealthCheckResponse_ServingStatus }>) {
  const seen: HealthCheckResponse_ServingStatus[] = [];
  const outcome = (async () => {
    for await (const response of stream) seen.push(response.status);
    return "ok" as const;
  })().catch((error: unknown) => ConnectError.from(error).code);
  return { seen, outcome };
}

describe("createHealthService", () => {
  it("answers Check from the status function, NOT_FOUND for unknown services", async () => {
    const { statuses, client } = setup();
    expect((await client.check({})).status).toBe(SERVING);
    statuses.set("aether.registry.v1.ConfigService", NOT_SERVING);
    expect((await client.check({ service: "aether.registry.v1.ConfigService" })).status).toBe(
      NOT_SERVING,
    );
    await expect(client.check({ service: "unknown" })).rejects.toMatchObject({
      code: Code.NotFound,
    });
  });

  it("reports NOT_SERVING for known services once draining", async () => {
    const { drain, client } = setup();
    drain.abort();
    expect((await client.check({})).status).toBe(NOT_SERVING);
    await expect(client.check({ service: "unknown" })).rejects.toMatchObject({
      code: Code.NotFound,
    });
  });

  it("sends the current status, then one message per change announced with notify()", async () => {
    const { statuses, health, client } = setup({ pollIntervalMs: 0 });
    const abort = new AbortController();
    const watch = record(client.watch({ service: "svc" }, { signal: abort.signal }));
    await waitFor(() => watch.seen.length === 1, 5_000, "the first message");
    expect(watch.seen).toEqual([SERVICE_UNKNOWN]);

    health.notify(); // no change: no message
    statuses.set("svc", SERVING);
    health.notify();
    await waitFor(() => watch.seen.length === 2, 5_000, "the SERVING update");
    statuses.set("svc", NOT_SERVING);
    health.notify();
    await waitFor(() => watch.seen.length === 3, 5_000, "the NOT_SERVING update");
    expect(watch.seen).toEqual([SERVICE_UNKNOWN, SERVING, NOT_SERVING]);

    abort.abort();
    expect(await watch.outcome).toBe(Code.Canceled);
  });

  it("notices unannounced changes by polling", async () => {
    const { statuses, client } = setup({ pollIntervalMs: 20 });
    const abort = new AbortController();
    const watch = record(client.watch({}, { signal: abort.signal }));
    await waitFor(() => watch.seen.length === 1, 5_000, "the first message");
    statuses.set("", NOT_SERVING);
    await waitFor(() => watch.seen.length === 2, 5_000, "the polled update");
    expect(watch.seen).toEqual([SERVING, NOT_SERVING]);
    abort.abort();
    await watch.outcome;
  });

  it("ends every Watch with OK when draining starts, after a last NOT_SERVING", async () => {
    const { drain, client } = setup({ pollIntervalMs: 0 });
    const overall = record(client.watch({}));
    const unknown = record(client.watch({ service: "unknown" }));
    await waitFor(
      () => overall.seen.length === 1 && unknown.seen.length === 1,
      5_000,
      "the first messages",
    );
    drain.abort();
    expect(await overall.outcome).toBe("ok");
    expect(await unknown.outcome).toBe("ok");
    expect(overall.seen).toEqual([SERVING, NOT_SERVING]);
    expect(unknown.seen).toEqual([SERVICE_UNKNOWN]);

    const late = record(client.watch({}));
    expect(await late.outcome).toBe("ok");
    expect(late.seen).toEqual([NOT_SERVING]);
  });
});
