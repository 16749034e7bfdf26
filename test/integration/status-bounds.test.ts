/**
 * GetConfigStatus stays small however much is wrong: a registrar exporting
 * from a directory of duplicated manifests, broken files and invalid routes,
 * over a store holding thousands of projections its policy rejects. Every
 * list holds its first hundred entries and a final one counting the rest;
 * the encoded response is measured, and `aetherctl status` renders it.
 */
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { toBinary } from "@bufbuild/protobuf";
import { afterEach, describe, expect, it } from "vitest";
import { countStatusProblems, formatStatus } from "../../clients/aetherctl/status-format.js";
import { GetConfigStatusResponseSchema } from "../../gen/aether/registry/v1/config_service_pb.js";
import { omittedCount, TRUNCATED_REASON } from "../../services/common/bounded-list.js";
import {
  createMemoryBackend,
  createMemoryStore,
} from "../../services/registrar/store/memory-store.js";
import { TRUNCATED_WHERE } from "../../services/sources/source-problems.js";
import { startTestRegistrar, type TestRegistrar } from "../support/in-process-registrar.js";
import { makeProjection, versionAt } from "../support/projections.js";
import { waitFor } from "../support/wait.js";

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** `count` Services of namespace `ns`, one document each. */
function services(count: number): string {
  return Array.from(
    { length: count },
    (_, i) =>
      `apiVersion: v1\nkind: Service\nmetadata:\n  namespace: ns\n  name: svc-${i}\nspec:\n  ports:\n  - port: 80\n`,
  ).join("---\n");
}

/** An exported Service shop/web and `count` HTTPRoutes to it, each with an invalid regex. */
function invalidRoutes(count: number): string {
  const documents = [
    "apiVersion: v1\nkind: Service\nmetadata:\n  namespace: shop\n  name: web\nspec:\n  ports:\n  - port: 80\n",
    "apiVersion: multicluster.x-k8s.io/v1alpha1\nkind: ServiceExport\nmetadata:\n  namespace: shop\n  name: web\n",
  ];
  for (let i = 0; i < count; i++) {
    documents.push(
      `apiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata:\n  namespace: shop\n  name: bad-${i}\nspec:\n  parentRefs:\n  - group: ""\n    kind: Service\n    name: web\n  rules:\n  - matches:\n    - path:\n        type: RegularExpression\n        value: "(unclosed"\n`,
    );
  }
  return documents.join("---\n");
}

describe("GetConfigStatus bounds", () => {
  it("lists at most a hundred entries per list, counts the rest, and stays small", async () => {
    const root = await mkdtemp(join(tmpdir(), "status-bounds-"));
    cleanups.push(() => rm(root, { recursive: true, force: true }));
    const manifest = services(2_000);
    for (const name of ["a", "b", "c", "d"]) await writeFile(join(root, `${name}.yaml`), manifest);
    for (let i = 0; i < 150; i++) {
      await writeFile(join(root, `broken-${String(i).padStart(3, "0")}.yaml`), "kind: [\n");
    }
    await writeFile(join(root, "routes.yaml"), invalidRoutes(300));

    const backend = createMemoryBackend();
    const east = createMemoryStore({ origin: "east", backend });
    for (let i = 0; i < 2_000; i++) {
      await east.put(makeProjection(`shop/s-${i}`, { version: versionAt(i + 1) }));
    }
    const hub = createMemoryStore({ origin: "hub", backend });
    const r: TestRegistrar = await startTestRegistrar(
      ["--cluster", "hub", "--control-cluster", "hub", "--export-source", `dir:${root}`],
      { store: hub },
    );
    cleanups.push(() => r.stop());
    await waitFor(
      async () => ((await r.client.getConfigStatus({})).export?.routeRejections.length ?? 0) > 0,
      20_000,
      "the first export",
    );
    const status = await r.client.getConfigStatus({});

    expect(status.rejections).toHaveLength(101);
    const lastRejection = status.rejections[100];
    expect(lastRejection?.reason).toBe(TRUNCATED_REASON);
    expect(lastRejection?.message).toBe("1,900 more rejections not shown (2,000 in all)");
    const exp = status.export;
    expect(exp?.routeRejections).toHaveLength(101);
    expect(exp?.routeRejections[100]?.reason).toBe(TRUNCATED_REASON);
    expect(omittedCount(exp?.routeRejections[100]?.message ?? "")).toBe(200);
    expect(exp?.sourceProblems).toHaveLength(101);
    expect(exp?.sourceProblems[100]?.where).toBe(TRUNCATED_WHERE);
    // 150 broken files and 3 duplicated manifests.
    expect(omittedCount(exp?.sourceProblems[100]?.message ?? "")).toBe(53);

    const bytes = toBinary(GetConfigStatusResponseSchema, status).length;
    expect(bytes).toBeLessThan(96 * 1024);

    const text = formatStatus(status, Date.now());
    expect(text).toContain("REJECTIONS (100 of 2,000)");
    expect(text).toContain("  ROUTE REJECTIONS (100 of 300)");
    expect(text).toContain("  SOURCE PROBLEMS (100 of 153)");
    expect(text).toContain("… 1,900 more not shown");
    expect(countStatusProblems(status)).toBe(2_000 + 300 + 153);
  });
});
