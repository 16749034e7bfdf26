/**
 * The status subresource of aether's own policy kinds (HTTPFilter,
 * VirtualHost in deploy/crds): the registrar writes their GEP-713 ancestor
 * status through `.../status`, so each CRD must have the subresource, and
 * the status it writes must fit the CRD's status schema.
 */
import { describe, expect, it } from "vitest";
import type { KubeObject } from "../../services/common/kube-object.js";
import { projectServices } from "../../services/common/projector.js";
import { planStatusPatches } from "../../services/common/status-plan.js";
import { kubeService, serviceExport } from "../support/kube-objects.js";
import { readCrd, type Schema, schemaProblems } from "./crd-files.js";

/** The CRD fields this test reads. */
interface Crd {
  readonly spec: {
    readonly versions: readonly {
      readonly subresources?: { readonly status?: object };
      readonly schema: { readonly openAPIV3Schema: Schema };
    }[];
  };
}

const NS = "shop";
const target = (name: string) => ({ group: "", kind: "Service", name });
const meta = (name: string) => ({ namespace: NS, name, resourceVersion: "5", generation: 2 });

/** An accepted and a rejected object of each kind, with the Service they target. */
const OBJECTS: KubeObject[] = [
  kubeService("cart", NS, [{ name: "http", port: 8080 }]),
  serviceExport("cart", NS),
  {
    apiVersion: "mesh.aether.dev/v1alpha1",
    kind: "HTTPFilter",
    metadata: meta("ok"),
    spec: {
      targetRefs: [target("cart")],
      headerMutation: { request: { set: [{ name: "x-a", value: "1" }] } },
    },
  },
  {
    apiVersion: "mesh.aether.dev/v1alpha1",
    kind: "HTTPFilter",
    metadata: meta("bad"),
    spec: { targetRefs: [target("cart")], headerMutation: { request: { set: [{ name: "" }] } } },
  },
  {
    apiVersion: "mesh.aether.dev/v1alpha1",
    kind: "VirtualHost",
    metadata: meta("ok"),
    spec: { targetRef: target("cart"), hostnames: ["cart.example.com"] },
  },
  {
    apiVersion: "mesh.aether.dev/v1alpha1",
    kind: "VirtualHost",
    metadata: meta("gone"),
    spec: { targetRef: target("gone"), hostnames: ["gone.example.com"] },
  },
];

describe("the status subresource of the HTTPFilter and VirtualHost CRDs", () => {
  const output = projectServices(OBJECTS);
  const patches = planStatusPatches(
    {
      objects: OBJECTS,
      services: new Set(output.projections.map((p) => p.service)),
      rejections: output.rejections,
      warnings: output.warnings,
    },
    "2026-12-03T10:00:00Z",
  );

  for (const [file, kind] of [
    ["httpfilter-crd.yaml", "HTTPFilter"],
    ["virtualhost-crd.yaml", "VirtualHost"],
  ] as const) {
    it(`${kind}: has the subresource, and the status the registrar writes fits its schema`, async () => {
      const [version] = (await readCrd<Crd>(file)).spec.versions;
      expect(version?.subresources?.status).toEqual({});
      const schema = version?.schema.openAPIV3Schema.properties?.status as Schema;
      const written = patches.filter((p) => p.kind === kind);
      expect(written.map((p) => p.name).sort()).toEqual(
        kind === "HTTPFilter" ? ["bad", "ok"] : ["gone", "ok"],
      );
      for (const patch of written) {
        expect(schemaProblems(patch.body.status, schema, "status"), patch.name).toEqual([]);
      }
      expect(schemaProblems({ ancestors: [{ ancestorRef: {} }] }, schema, "status")).not.toEqual(
        [],
      );
    });
  }
});
