/**
 * A service's BackendTLSPolicy reaches the data plane through the agent: an
 * exported policy (projected with its CA ConfigMap resolved to PEM text,
 * stored in a real in-process registrar, followed over HTTP/2) and a local
 * class-2 one both appear in `/routes` as the projection's `backendTls`, and
 * survive the agent's last-known cache. Real sockets, real files.
 */
import { describe, expect, it } from "vitest";
import type { KubeObject } from "../../services/common/kube-object.js";
import {
  exportedProjection,
  projectionFieldOf,
  routesBeforeAndAfterRestart,
  serviceWithRoute as withPort,
} from "../support/agent-route-table.js";

const serviceWithRoute = (name: string) => withPort(name, { name: "https", port: 443 });
const backendTls = (body: string) => projectionFieldOf(body, "backendTls");

const PEM = "-----BEGIN CERTIFICATE-----\nMIIBagent\n-----END CERTIFICATE-----\n";

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

describe("agent: BackendTLSPolicy in the route table", () => {
  it("serves exported and local backend TLS at /routes and keeps it in its cache", async () => {
    const projection = exportedProjection([
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
    ]);
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
