/**
 * The registrar's mutual-TLS port (issue 13), in process, over real loopback
 * sockets with certificates this test makes (openssl): Connect (HTTP/2 and
 * HTTP/1.1), gRPC (@grpc/grpc-js, buf curl), gRPC-Web and curl with client
 * certificates; the refusals (no certificate, an unknown CA, expired, the
 * cross-trust-domain forgery, two URI SANs, plaintext), each counted by
 * reason; `--authorize` denying a verified ID with PermissionDenied naming
 * it; and the admin port answering plain HTTP meanwhile. Rotation has its own
 * file (registrar-mtls-rotation.test.ts).
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Code, ConnectError } from "@connectrpc/connect";
import * as grpc from "@grpc/grpc-js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ConfigView } from "../../gen/aether/registry/v1/config_service_pb.js";
import { execFileAsync } from "../interop/fixtures.js";
import { listAllConfig, loadConfigServiceClient } from "../support/grpc-js-client.js";
import { startTestRegistrar, type TestRegistrar } from "../support/in-process-registrar.js";
import {
  clientTlsOptions,
  connectClient,
  grpcWebClient,
  registrarTlsFlags,
} from "../support/mtls-clients.js";
import { makeProjection } from "../support/projections.js";
import { scrapeMetric } from "../support/scrape-metric.js";
import { issueSvid, type TestSvid } from "../support/spiffe-ca.js";
import { runCommand, sendRawBytes } from "../support/test-http-server.js";
import { createSpiffePki, type SpiffePki } from "../support/test-spiffe-pki.js";
import { waitFor } from "../support/wait.js";

const INTRUDER_ID = "spiffe://east.mesh/ns/other/sa/intruder";

let dir: string;
let pki: SpiffePki;
let intruder: TestSvid;
let registrar: TestRegistrar;
let adminUrl: string;
let port: number;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "aether-registrar-mtls-"));
  pki = await createSpiffePki(dir);
  intruder = await issueSvid(pki.eastCa, dir, "intruder", { uris: [INTRUDER_ID] });
  registrar = await startTestRegistrar([
    "--cluster",
    "hub",
    "--admin-listen",
    "127.0.0.1:0",
    ...registrarTlsFlags(pki),
  ]);
  adminUrl = registrar.registrar.adminAddress?.url as string;
  port = Number(new URL(registrar.url).port);
  await registrar.registrar.store.put(makeProjection("shop/cart"));
}, 60_000);

afterAll(async () => {
  await registrar?.stop();
  await rm(dir, { recursive: true, force: true });
});

const handshakeFailures = (reason: string) =>
  scrapeMetric(adminUrl, `aether_config_tls_handshake_failures_total{reason="${reason}"}`);
const deniedCalls = (reason: string) =>
  scrapeMetric(adminUrl, `aether_config_denied_calls_total{reason="${reason}"}`);

/** The error a call failed with (or "ok"). */
async function outcome(call: Promise<unknown>): Promise<ConnectError | "ok"> {
  return call.then(
    () => "ok" as const,
    (error: unknown) => ConnectError.from(error),
  );
}

describe("the registrar's mutual-TLS port", () => {
  it("serves https:// and its admin port plain HTTP", async () => {
    expect(registrar.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    const ready = await fetch(`${adminUrl}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.text()).toBe("ready\n");
    const metrics = await (await fetch(`${adminUrl}/metrics`)).text();
    expect(metrics).toMatch(/^aether_config_tls_certificate_expiry_timestamp_seconds \d+$/m);
  });

  it.each(["2", "1.1"] as const)(
    "answers the generated Connect client with the agent's SVID over HTTP/%s",
    async (httpVersion) => {
      const client = connectClient(registrar.url, pki, pki.client, httpVersion);
      const response = await client.listAllConfig({ view: ConfigView.ALL_ORIGINS });
      expect(response.projections.map((p) => p.service)).toEqual(["shop/cart"]);
    },
  );

  it("answers gRPC-Web over HTTP/1.1", async () => {
    const response = await grpcWebClient(registrar.url, pki, pki.client).listAllConfig({});
    expect(response.projections.map((p) => p.service)).toEqual(["shop/cart"]);
  });

  it("answers @grpc/grpc-js with credentials.createSsl and the agent's SVID", async () => {
    const tls = clientTlsOptions(pki, pki.client);
    const credentials = grpc.credentials.createSsl(
      Buffer.from(tls.ca.join("")),
      tls.key,
      tls.cert,
      { checkServerIdentity: tls.checkServerIdentity },
    );
    const ConfigService = loadConfigServiceClient();
    const client = new ConfigService(`127.0.0.1:${port}`, credentials);
    try {
      const response = await listAllConfig(client, {});
      expect(response.projections.map((p) => p.service)).toEqual(["shop/cart"]);
    } finally {
      client.close();
    }
  });

  it("answers curl --cert with Connect JSON over HTTP/1.1", async () => {
    const result = await runCommand("curl", [
      ...["-sS", "--http1.1", "--cacert", pki.hubCa.cert],
      ...["--cert", pki.client.cert, "--key", pki.client.key],
      ...["-H", "content-type: application/json", "-d", "{}"],
      `${registrar.url}/aether.registry.v1.ConfigService/ListAllConfig`,
    ]);
    expect(result.stderr).toBe("");
    expect(JSON.parse(result.stdout).projections[0].service).toBe("shop/cart");
  });

  it("answers buf curl --cacert --cert --key over gRPC, learning the schema by reflection", async () => {
    const { stdout } = await execFileAsync(
      "npx",
      [
        ...["--no-install", "buf", "curl", "--protocol", "grpc"],
        ...["--cacert", pki.hubCa.cert, "--cert", pki.client.cert, "--key", pki.client.key],
        ...["-d", "{}", `${registrar.url}/aether.registry.v1.ConfigService/ListAllConfig`],
      ],
      { timeout: 30_000 },
    );
    expect(JSON.parse(stdout).projections[0].service).toBe("shop/cart");
  });

  const refused: [string, keyof SpiffePki | undefined, string][] = [
    ["no client certificate", undefined, "no_certificate"],
    ["a certificate from an unknown CA", "unknownCa", "untrusted_chain"],
    ["an expired certificate", "expired", "expired"],
    ["east's CA signing a hub.mesh ID (cross-trust-domain forgery)", "forgery", "untrusted_chain"],
    ["a certificate with two URI SANs", "twoUris", "multiple_uri_sans"],
  ];
  it.each(refused)("refuses %s and counts it", async (_, name, reason) => {
    const before = (await handshakeFailures(reason)) ?? 0;
    const svid = name === undefined ? undefined : (pki[name] as TestSvid);
    const result = await outcome(connectClient(registrar.url, pki, svid).listAllConfig({}));
    expect(result).not.toBe("ok");
    expect((result as ConnectError).code).not.toBe(Code.PermissionDenied);
    await waitFor(
      async () => ((await handshakeFailures(reason)) ?? 0) > before,
      5_000,
      `a handshake failure counted as ${reason}`,
    );
  });

  it.each([
    ["an HTTP/1.1 request", "GET /healthz HTTP/1.1\r\nhost: x\r\n\r\n"],
    ["the h2c preface", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"],
  ])("refuses plaintext (%s): no HTTP answer, counted as not_tls", async (_, bytes) => {
    const before = (await handshakeFailures("not_tls")) ?? 0;
    const answer = await sendRawBytes(port, bytes, { end: false });
    expect(answer.toString("latin1")).not.toMatch(/HTTP\//);
    await waitFor(async () => ((await handshakeFailures("not_tls")) ?? 0) > before, 5_000);
  });

  it("denies a verified ID outside --authorize with PermissionDenied naming it, in every protocol", async () => {
    const before = (await deniedCalls("not_authorized")) ?? 0;
    for (const client of [
      connectClient(registrar.url, pki, intruder, "2"),
      connectClient(registrar.url, pki, intruder, "1.1"),
      grpcWebClient(registrar.url, pki, intruder),
    ]) {
      const result = await outcome(client.listAllConfig({}));
      expect(result).toBeInstanceOf(ConnectError);
      expect((result as ConnectError).code).toBe(Code.PermissionDenied);
      expect((result as ConnectError).rawMessage).toBe(
        `${INTRUDER_ID} is not authorized to call /aether.registry.v1.ConfigService/ListAllConfig on this registrar (--authorize)`,
      );
    }
    const watch = await outcome(
      (async () => {
        const stream = connectClient(registrar.url, pki, intruder).watchConfig({});
        for await (const _ of stream) return;
      })(),
    );
    expect((watch as ConnectError).code).toBe(Code.PermissionDenied);
    const curl = await runCommand("curl", [
      ...["-sS", "--http1.1", "--cacert", pki.hubCa.cert, "-w", "\n%{http_code}"],
      ...["--cert", intruder.cert, "--key", intruder.key],
      ...["-H", "content-type: application/json", "-d", "{}"],
      `${registrar.url}/aether.registry.v1.ConfigService/ListAllConfig`,
    ]);
    const [body, status] = curl.stdout.split("\n");
    expect(status).toBe("403");
    expect(JSON.parse(body as string)).toMatchObject({ code: "permission_denied" });
    expect(JSON.parse(body as string).message).toContain(INTRUDER_ID);
    expect(((await deniedCalls("not_authorized")) ?? 0) - before).toBe(5);
  });

  it("denies @grpc/grpc-js callers outside --authorize with PERMISSION_DENIED", async () => {
    const tls = clientTlsOptions(pki, intruder);
    const credentials = grpc.credentials.createSsl(
      Buffer.from(tls.ca.join("")),
      tls.key,
      tls.cert,
      {
        checkServerIdentity: tls.checkServerIdentity,
      },
    );
    const client = new (loadConfigServiceClient())(`127.0.0.1:${port}`, credentials);
    try {
      const error = await listAllConfig(client, {}).then(
        () => undefined,
        (e: grpc.ServiceError) => e,
      );
      expect(error?.code).toBe(grpc.status.PERMISSION_DENIED);
      expect(error?.details).toContain(INTRUDER_ID);
    } finally {
      client.close();
    }
  });

  it("keeps serving the authorized agent after the refusals", async () => {
    const client = connectClient(registrar.url, pki, pki.client);
    const status = await client.getConfigStatus({});
    expect(status).toMatchObject({ cluster: "hub", synced: true });
  });
});
