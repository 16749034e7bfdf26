/**
 * `buf curl` without a schema: it learns the API from the registrar's gRPC
 * server reflection, then calls it with the gRPC and the Connect protocols.
 * The registrar runs as a real OS process.
 */
import type { JsonObject } from "@bufbuild/protobuf";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RegistrarProcess, stopAllRegistrars } from "../support/registrar-process.js";
import {
  CONFIG_SERVICE,
  execFileAsync,
  grpcProjection,
  httpProjection,
  removeSeedFiles,
  servicesOf,
  stamped,
  startSeededRegistrar,
} from "./fixtures.js";

interface CommandOutcome {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs `npx buf curl ARGS` (no shell, no --schema) and resolves with its exit code and output. */
async function bufCurl(args: readonly string[]): Promise<CommandOutcome> {
  try {
    const { stdout, stderr } = await execFileAsync(
      "npx",
      ["--no-install", "buf", "curl", ...args],
      {
        timeout: 20_000,
      },
    );
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failure = error as { code?: unknown; stdout?: string; stderr?: string };
    if (typeof failure.code !== "number") throw error;
    return { code: failure.code, stdout: failure.stdout ?? "", stderr: failure.stderr ?? "" };
  }
}

const CLUSTER = "east";
const T1 = "2026-11-29T12:00:00.000000000Z";
const SEED = [
  httpProjection("shop/checkout", T1, "spoofed"),
  grpcProjection("payments/ledger", T1),
  httpProjection("web/frontend", T1),
];
const EXPECTED = new Map(SEED.map((p) => [String(p.service), stamped(p, CLUSTER)]));
const SERVICES = [...EXPECTED.keys()].sort();

describe("buf curl with server reflection (no --schema) against a registrar process", () => {
  let registrar: RegistrarProcess;

  beforeAll(async () => {
    registrar = await startSeededRegistrar(CLUSTER, SEED);
  });
  afterAll(async () => {
    await stopAllRegistrars();
    await removeSeedFiles();
  });

  it("--list-services lists the ConfigService, health and both reflection versions", async () => {
    const result = await bufCurl(["--list-services", registrar.url]);
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    expect(result.stdout.trim().split("\n").sort()).toEqual([
      CONFIG_SERVICE,
      "grpc.health.v1.Health",
      "grpc.reflection.v1.ServerReflection",
      "grpc.reflection.v1alpha.ServerReflection",
    ]);
  });

  it("--list-methods lists every ConfigService method among the others", async () => {
    const result = await bufCurl(["--list-methods", registrar.url]);
    expect(result.code).toBe(0);
    const methods = result.stdout.trim().split("\n");
    expect(methods.filter((m) => m.startsWith(`${CONFIG_SERVICE}/`)).sort()).toEqual([
      `${CONFIG_SERVICE}/GetConfigStatus`,
      `${CONFIG_SERVICE}/GetFleetStatus`,
      `${CONFIG_SERVICE}/ListAllConfig`,
      `${CONFIG_SERVICE}/ListConfig`,
      `${CONFIG_SERVICE}/ReportAppliedConfig`,
      `${CONFIG_SERVICE}/WatchConfig`,
    ]);
    expect(methods).toContain("grpc.health.v1.Health/Check");
  });

  it.each([
    { protocol: "gRPC over h2c", flags: ["--protocol", "grpc", "--http2-prior-knowledge"] },
    { protocol: "Connect (the default) over HTTP/1.1", flags: [] },
    { protocol: "gRPC-Web over HTTP/1.1", flags: ["--protocol", "grpcweb"] },
  ])(
    "calls ListAllConfig with $protocol and prints every projection, stamped, as JSON",
    async ({ flags }) => {
      const result = await bufCurl([
        ...flags,
        "--data",
        '{"view":"CONFIG_VIEW_ALL_ORIGINS"}',
        `${registrar.url}/${CONFIG_SERVICE}/ListAllConfig`,
      ]);
      expect(result.stderr).toBe("");
      expect(result.code).toBe(0);
      const body = JSON.parse(result.stdout) as { projections: JsonObject[]; revision: string };
      expect(BigInt(body.revision)).toBeGreaterThan(0n);
      expect(body).not.toHaveProperty("nextPageToken");
      expect(servicesOf(body.projections).sort()).toEqual(SERVICES);
      for (const projection of body.projections) {
        expect(projection).toEqual(EXPECTED.get(String(projection.service)));
      }
    },
  );

  it("calls ListConfig with page_size 1 and gets one projection and a next_page_token", async () => {
    const result = await bufCurl([
      "--protocol",
      "grpc",
      "--http2-prior-knowledge",
      "--data",
      '{"pageSize":1}',
      `${registrar.url}/${CONFIG_SERVICE}/ListConfig`,
    ]);
    expect(result.code).toBe(0);
    const body = JSON.parse(result.stdout) as {
      projections: JsonObject[];
      nextPageToken: string;
      revision: string;
    };
    expect(body.projections).toHaveLength(1);
    expect(body.projections[0]?.originCluster).toBe(CLUSTER);
    expect(body.nextPageToken).not.toBe("");
    expect(BigInt(body.revision)).toBeGreaterThan(0n);
  });

  it("reports a malformed request as invalid_argument (exit code 3 × 8) with the server's message", async () => {
    const result = await bufCurl([
      "--protocol",
      "grpc",
      "--http2-prior-knowledge",
      "--data",
      '{"services":["Bad Name"]}',
      `${registrar.url}/${CONFIG_SERVICE}/ListAllConfig`,
    ]);
    expect(result.code).toBe(24);
    expect(JSON.parse(result.stderr)).toEqual({
      code: "invalid_argument",
      message: 'service "Bad Name" must be "namespace/name"',
    });
  });
});
