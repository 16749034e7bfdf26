/**
 * The MeshConfig CRD (deploy/crds/meshconfig-crd.yaml), read as the file it
 * is (no kubectl needed): it defines the cluster-scoped kind the Kubernetes
 * source watches, only the name `default`, the defaults the projector fills
 * in, and its schema accepts and refuses what the projector does,
 * table-driven. The MeshConfig of examples/mesh is valid by both.
 */
import { describe, expect, it } from "vitest";
import type { KubeObject } from "../../services/common/kube-object.js";
import { MESH_DEFAULTS, readMeshConfig } from "../../services/common/projector-mesh-config-read.js";
import {
  schemaProblems as check,
  exampleObjects,
  expectWatchedResource,
  readCrd,
  type Schema,
} from "./crd-files.js";

/** The CRD object, the fields the tests read. */
interface MeshConfigCrd {
  readonly kind: string;
  readonly metadata: { readonly name: string };
  readonly spec: {
    readonly group: string;
    readonly scope: string;
    readonly names: { readonly kind: string; readonly plural: string };
    readonly versions: readonly { name: string; schema: { openAPIV3Schema: Schema } }[];
  };
}

const crd = () => readCrd<MeshConfigCrd>("meshconfig-crd.yaml");
const rootSchema = async () => (await crd()).spec.versions[0]?.schema.openAPIV3Schema as Schema;

const meshConfig = (spec: unknown): KubeObject => ({
  apiVersion: "mesh.aether.dev/v1alpha1",
  kind: "MeshConfig",
  metadata: { name: "default" },
  spec,
});

/** Whether the projector reads `spec` without a rejection. */
function byProjector(spec: unknown): boolean {
  try {
    readMeshConfig(meshConfig(spec));
    return true;
  } catch {
    return false;
  }
}

describe("the MeshConfig CRD", () => {
  it("defines the cluster-scoped resource the Kubernetes source watches, named default only", async () => {
    expectWatchedResource(await crd(), "MeshConfig", false);
    const rules = (await rootSchema())["x-kubernetes-validations"]?.map((r) => r.rule);
    expect(rules).toEqual(["self.metadata.name == 'default'"]);
  });

  it("defaults what the projector defaults", async () => {
    const spec = (await rootSchema()).properties?.spec?.properties ?? {};
    type Defaulted = Schema & { readonly default?: unknown };
    const outlier = spec.outlierDetection?.properties ?? {};
    const defaults = (schema: Readonly<Record<string, Defaulted>>) =>
      Object.fromEntries(Object.entries(schema).map(([k, v]) => [k, v.default]));
    expect(defaults(outlier)).toEqual({
      consecutive5xxErrors: MESH_DEFAULTS.consecutive5xxErrors,
      interval: `${MESH_DEFAULTS.intervalSeconds}s`,
      baseEjectionTime: `${MESH_DEFAULTS.baseEjectionSeconds}s`,
      maxEjectionPercent: MESH_DEFAULTS.maxEjectionPercent,
    });
    expect(defaults(spec.retryBudget?.properties ?? {}).minRetryConcurrency).toBe(
      MESH_DEFAULTS.minRetryConcurrency,
    );
  });

  /** [spec, valid]: the schema's structure and the projector agree. */
  const cases: [unknown, boolean][] = [
    [{ requestTimeout: "15s" }, true],
    [{ requestTimeout: "1h30m" }, true],
    [{ requestTimeout: "15" }, false],
    [{ requestTimeout: "1.5s" }, false],
    [{ retry: { codes: [503], attempts: 2, backoff: "100ms" } }, true],
    [{ retry: { codes: [399] } }, false],
    [{ retry: { codes: [600] } }, false],
    [{ retry: { attempts: -1 } }, false],
    [{ retryBudget: { percent: 20, minRetryConcurrency: 3 } }, true],
    [{ retryBudget: { percent: 0 } }, false],
    [{ retryBudget: { percent: 101 } }, false],
    [{ retryBudget: { minRetryConcurrency: 3 } }, false],
    [{ outlierDetection: { consecutive5xxErrors: 5, maxEjectionPercent: 100 } }, true],
    [{ outlierDetection: { maxEjectionPercent: 101 } }, false],
    [{ outlierDetection: { interval: "10" } }, false],
    [{ timeout: "1s" }, false],
  ];
  it.each(cases)("the schema and the projector agree on %j (valid: %s)", async (spec, valid) => {
    const schema = await rootSchema();
    expect(check(meshConfig(spec), schema, "").length === 0).toBe(valid);
    expect(byProjector(spec)).toBe(valid);
  });

  it("has a CEL rule for what the walker cannot check: a zero interval or ejection time", async () => {
    const outlier = (await rootSchema()).properties?.spec?.properties?.outlierDetection as Schema;
    const rules = outlier["x-kubernetes-validations"]?.map((r) => r.rule).join("\n");
    expect(rules).toContain("duration(self.interval) > duration('0s')");
    expect(rules).toContain("duration(self.baseEjectionTime) > duration('0s')");
    expect(byProjector({ outlierDetection: { interval: "0s" } })).toBe(false);
    expect(byProjector({ outlierDetection: { baseEjectionTime: "0ms" } })).toBe(false);
  });

  it("the MeshConfig of examples/mesh is the one named default, valid by both", async () => {
    const found = await exampleObjects("examples/mesh", "MeshConfig");
    expect(found.map(({ object }) => (object.metadata as { name: string }).name)).toEqual([
      "default",
    ]);
    const schema = await rootSchema();
    for (const { path, object } of found) {
      expect(check(object, schema, ""), path).toEqual([]);
      expect(() => readMeshConfig(object as KubeObject), path).not.toThrow();
    }
  });
});
