/**
 * The VirtualHost CRD (deploy/crds/virtualhost-crd.yaml), read as the file
 * it is (no kubectl needed): it defines the kind and resource the Kubernetes
 * source watches, and its hostname pattern accepts and refuses exactly what
 * the projector does, table-driven. Every VirtualHost in examples/mesh is
 * read by the projector without a problem.
 */
import { describe, expect, it } from "vitest";
import type { KubeObject } from "../../services/common/kube-object.js";
import { readVirtualHost } from "../../services/common/projector-virtual-host-read.js";
import { exampleObjects, expectWatchedResource, readCrd } from "./crd-files.js";

interface HostnamesSchema {
  readonly minItems: number;
  readonly maxItems: number;
  readonly items: { readonly pattern: string; readonly maxLength: number };
}

/** The fields of the CRD the tests read. */
type VirtualHostCrd = {
  kind: string;
  metadata: { name: string };
  spec: {
    group: string;
    scope: string;
    names: { kind: string; plural: string };
    versions: {
      name: string;
      schema: {
        openAPIV3Schema: { properties: { spec: { properties: Record<string, unknown> } } };
      };
    }[];
  };
};

const crd = () => readCrd<VirtualHostCrd>("virtualhost-crd.yaml");

function virtualHost(hostnames: unknown): KubeObject {
  return {
    apiVersion: "mesh.aether.dev/v1alpha1",
    kind: "VirtualHost",
    metadata: { namespace: "shop", name: "v" },
    spec: { targetRef: { group: "", kind: "Service", name: "web" }, hostnames },
  };
}

describe("the VirtualHost CRD", () => {
  it("defines the resource the Kubernetes source watches", async () => {
    expectWatchedResource(await crd(), "VirtualHost", true);
  });

  const cases: [string, boolean][] = [
    ["web.example.com", true],
    ["*.example.com", true],
    ["localhost", true],
    [`${"a".repeat(63)}.example.com`, true],
    [`${"a".repeat(64)}.example.com`, false],
    ["Web.example.com", false],
    ["a.*.example.com", false],
    ["*", false],
    ["web.example.com:80", false],
    ["-web.example.com", false],
    ["web_1.example.com", false],
    ["web.example.com.", false],
  ];
  it.each(cases)("the schema and the projector agree on %s (valid: %s)", async (name, valid) => {
    const hostnames = (await crd()).spec.versions[0]?.schema.openAPIV3Schema.properties.spec
      .properties.hostnames as HostnamesSchema;
    const bySchema = new RegExp(hostnames.items.pattern).test(name) && name.length <= 253;
    expect(bySchema).toBe(valid);
    let byProjector = true;
    try {
      readVirtualHost(virtualHost([name]));
    } catch {
      byProjector = false;
    }
    expect(byProjector).toBe(valid);
    expect([hostnames.minItems, hostnames.maxItems]).toEqual([1, 16]);
  });

  it("every VirtualHost in examples/mesh reads without a problem", async () => {
    const found = await exampleObjects("examples/mesh", "VirtualHost");
    for (const { path, object } of found) {
      expect(() => readVirtualHost(object as KubeObject), path).not.toThrow();
    }
    expect(found.length).toBeGreaterThan(0);
  });
});
