/**
 * A service's BackendTLSPolicy reaches the data plane through the agent: an
 * exported policy (projected with its CA ConfigMap resolved to PEM text,
 * stored in a real in-process registrar, followed over HTTP/2) and a local
 * class-2 one both appear in `/routes` as the projection's `backendTls`, and
 * survive the agent's last-known cache. Real sockets, real files.
 */
import { describe, expect, it } from "vitest";
import type { KubeObject } from "../../services/common/kube-object.js";
import { projectServices } from "../../services/common/projector.js";
import { routesBeforeAndAfterRestart } from "../support/agent-route-table.js";

const PEM = "-----BEGIN CERTIFICATE-----\nMIIBagent\n-----END CERTIFICATE-----\n";

/** A Service `name` with an `https` port and a route attaching to it (which brings it into scope). */
function serviceWithRoute(name: string): KubeObject[] {
  return [
    {
      apiVersion: "v1",
      kind: "Service",
      metadata: { namespace: "shop", name },
      spec: { ports: [{ name: "https", port: 443 }] },
    },
    {
      apiVersion: "gateway.networking.k8s.io/v1",
      kind: "HTTPRoute",
      metadata: { namespace: "shop", name: `${name}-route` },
      spec: {
        parentRefs: [{ group: "", kind: "Service", name }],
        rules: [{ backendRefs: [{ name, port: 443 }] }],
      },
    },
  ];
}

function tlsPolicy(name: string, target: string, validation: object): KubeObject {
  return {
    apiVersion: "gateway.networking.k8s.io/v1",
    kind: "BackendTLSPolicy",
    metadata: { namespace: "shop", name },
    spec: {
      targetRefs: [{ group: "", kind: "Service", name: target, sectionName: "https" }],
      validation,
    },
  };
}

interface RoutesJson {
  services: { service: string; source: string; projection: { backendTls?: unknown[] } }[];
}

/** Each service's `backendTls` in a `/routes` document. */
function backendTls(body: string): Record<string, unknown> {
  const table = JSON.parse(body) as RoutesJson;
  return Object.fromEntries(
    table.services.map((s) => [`${s.service} (${s.source})`, s.projection.backendTls]),
  );
}

describe("agent: BackendTLSPolicy in the route table", () => {
  it("serves exported and local backend TLS at /routes and keeps it in its cache", async () => {
    const exported = projectServices(
      [
        ...serviceWithRoute("a"),
        {
          apiVersion: "v1",
          kind: "ConfigMap",
          metadata: { namespace: "shop", name: "a-ca" },
          data: { "ca.crt": PEM },
        } as KubeObject,
        tlsPolicy("a-tls", "a", {
          caCertificateRefs: [{ group: "", kind: "ConfigMap", name: "a-ca" }],
          hostname: "a.shop.example",
        }),
      ],
      { exportAll: true },
    );
    expect(exported.rejections).toEqual([]);
    const projection = exported.projections[0];
    if (projection === undefined) throw new Error("no projection of shop/a");
    const local = [
      ...serviceWithRoute("b"),
      tlsPolicy("b-tls", "b", {
        wellKnownCACertificates: "System",
        hostname: "b.example.com",
        subjectAltNames: [{ type: "URI", uri: "spiffe://west.mesh/ns/shop/sa/b" }],
      }),
    ];
    const { live, cached } = await routesBeforeAndAfterRestart(projection, local, [
      "shop/a",
      "shop/b",
    ]);
    const https = { port: 443, sectionName: "https", policyNamespace: "shop" };
    const want = {
      "shop/a (imported)": [
        { ...https, hostname: "a.shop.example", caCertificatesPem: PEM, policyName: "a-tls" },
      ],
      "shop/b (local)": [
        {
          ...https,
          hostname: "b.example.com",
          wellKnownCaCertificates: "WELL_KNOWN_CA_CERTIFICATES_SYSTEM",
          subjectAltNames: [{ uri: "spiffe://west.mesh/ns/shop/sa/b" }],
          policyName: "b-tls",
        },
      ],
    };
    expect(backendTls(live)).toEqual(want);
    // A restarted agent whose registrar is gone serves the same settings from its cache.
    expect(backendTls(cached)).toEqual(want);
  });
});
