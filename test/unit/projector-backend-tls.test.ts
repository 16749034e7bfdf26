/**
 * BackendTLSPolicy (Gateway API v1, GA since v1.4) on the projection,
 * table-driven: valid policies and what they carry per port, every invalid
 * policy with its reason, conflicts (oldest, then namespace/name, wins per
 * Service and sectionName), scope, determinism, and the incremental
 * projector equal byte for byte to a full projection through random edits
 * of policies, ConfigMaps and Services (and an HTTPFilter on the same
 * Services, so both kinds are tracked together).
 */
import { type JsonValue, toBinary } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { ServiceConfigProjectionSchema } from "../../gen/aether/registry/v1/projection_pb.js";
import type { KubeObject } from "../../services/common/kube-object.js";
import {
  type ProjectorOptions,
  projectServices,
  ROUTE_REJECTION_REASONS,
  ROUTE_WARNING_REASONS,
} from "../../services/common/projector.js";
import { checkIncrementalAgainstFull, projectedField } from "../support/incremental-vs-full.js";
import { kubeService, serviceExport } from "../support/kube-objects.js";

const NS = "shop";
const GW = "gateway.networking.k8s.io/v1";
const PEM = "-----BEGIN CERTIFICATE-----\nMIIBtest\n-----END CERTIFICATE-----\n";

/** A Service with an `http` (80) and an `https` (443) port. */
function service(name: string, namespace = NS): KubeObject {
  const ports = [80, 443].map((port) => ({ name: port === 80 ? "http" : "https", port }));
  return kubeService(name, namespace, ports);
}

function configMap(
  name: string,
  data: Record<string, unknown> | undefined,
  namespace = NS,
): KubeObject {
  return { apiVersion: "v1", kind: "ConfigMap", metadata: { namespace, name }, data } as KubeObject;
}

interface PolicyOptions {
  readonly targets?: unknown;
  readonly validation?: Record<string, unknown>;
  readonly created?: string;
  readonly namespace?: string;
  readonly options?: unknown;
}

function policy(name: string, o: PolicyOptions = {}): KubeObject {
  return {
    apiVersion: GW,
    kind: "BackendTLSPolicy",
    metadata: {
      namespace: o.namespace ?? NS,
      name,
      ...(o.created === undefined ? {} : { creationTimestamp: o.created }),
    },
    spec: {
      targetRefs: o.targets ?? [{ group: "", kind: "Service", name: "web" }],
      validation: o.validation ?? {
        caCertificateRefs: [{ group: "", kind: "ConfigMap", name: "ca" }],
        hostname: "web.shop.example",
      },
      ...(o.options === undefined ? {} : { options: o.options }),
    },
  };
}

const WORLD: KubeObject[] = [
  service("web"),
  serviceExport("web", NS),
  service("api"),
  configMap("ca", { "ca.crt": PEM }),
];

function backendTlsOf(
  objects: KubeObject[],
  key = `${NS}/web`,
  options: ProjectorOptions = {},
): JsonValue[] {
  return projectedField(objects, key, "backendTls", options);
}

const CA = { caCertificatesPem: PEM, hostname: "web.shop.example", policyNamespace: NS };

describe("projector: BackendTLSPolicy is carried per port", () => {
  const cases: [string, KubeObject[], JsonValue[]][] = [
    ["no policy: nothing", [], []],
    ["a CA ConfigMap, every port", [policy("p")], [{ ...CA, policyName: "p" }]],
    [
      "a sectionName resolves to its port; a bundle gets its final newline",
      [
        configMap("ca", { "ca.crt": PEM.trimEnd() }),
        policy("p", {
          targets: [{ group: "", kind: "Service", name: "web", sectionName: "https" }],
        }),
      ],
      [{ ...CA, port: 443, sectionName: "https", policyName: "p" }],
    ],
    [
      "well-known System CAs, subjectAltNames in order, options sorted",
      [
        policy("p", {
          validation: {
            wellKnownCACertificates: "System",
            hostname: "web.example.com",
            subjectAltNames: [
              { type: "URI", uri: "spiffe://hub.mesh/ns/shop/sa/web" },
              { type: "Hostname", hostname: "*.shop.example" },
            ],
          },
          options: { "example.com/min-version": "1.3", "example.com/alpn": "h2" },
        }),
      ],
      [
        {
          hostname: "web.example.com",
          wellKnownCaCertificates: "WELL_KNOWN_CA_CERTIFICATES_SYSTEM",
          subjectAltNames: [
            { uri: "spiffe://hub.mesh/ns/shop/sa/web" },
            { hostname: "*.shop.example" },
          ],
          options: [
            { key: "example.com/alpn", value: "h2" },
            { key: "example.com/min-version", value: "1.3" },
          ],
          policyNamespace: NS,
          policyName: "p",
        },
      ],
    ],
    [
      "two ConfigMaps: one bundle in reference order",
      [
        configMap("ca2", { "ca.crt": PEM.replace("test", "two") }),
        policy("p", {
          validation: {
            caCertificateRefs: [
              { group: "", kind: "ConfigMap", name: "ca2" },
              { group: "", kind: "ConfigMap", name: "ca" },
            ],
            hostname: "web.shop.example",
          },
        }),
      ],
      [{ ...CA, caCertificatesPem: PEM.replace("test", "two") + PEM, policyName: "p" }],
    ],
    [
      "every port and one section: both carried, sorted by port",
      [
        policy("all"),
        policy("tls", {
          targets: [{ group: "", kind: "Service", name: "web", sectionName: "https" }],
        }),
      ],
      [
        { ...CA, policyName: "all" },
        { ...CA, port: 443, sectionName: "https", policyName: "tls" },
      ],
    ],
    [
      "a targetRef of another kind is not this projection's",
      [
        policy("p", {
          targets: [
            { group: "example.com", kind: "Backend", name: "web" },
            { group: "", kind: "Service", name: "web" },
          ],
        }),
      ],
      [{ ...CA, policyName: "p" }],
    ],
  ];
  for (const [name, extra, want] of cases) {
    it(name, () => {
      expect(backendTlsOf([...WORLD, ...extra])).toEqual(want);
      const output = projectServices([...WORLD, ...extra]);
      expect(output.rejections).toEqual([]);
      expect(output.warnings).toEqual([]);
    });
  }
});

describe("projector: invalid BackendTLSPolicies are rejected with a reason", () => {
  const refs = (...names: string[]) =>
    names.map((name) => ({ group: "", kind: "ConfigMap", name }));
  const cases: [string, KubeObject[], string, RegExp][] = [
    [
      "a missing ConfigMap",
      [policy("p", { validation: { caCertificateRefs: refs("nope"), hostname: "a.b" } })],
      "invalid_ca_certificate_ref",
      /ConfigMap shop\/nope, which does not exist/,
    ],
    [
      "a ConfigMap without ca.crt",
      [
        configMap("other", { "tls.crt": PEM }),
        policy("p", { validation: { caCertificateRefs: refs("other"), hostname: "a.b" } }),
      ],
      "invalid_ca_certificate_ref",
      /ca\.crt holds nothing/,
    ],
    [
      "a ca.crt that is not PEM",
      [
        configMap("junk", { "ca.crt": "hello" }),
        policy("p", { validation: { caCertificateRefs: refs("junk"), hostname: "a.b" } }),
      ],
      "invalid_ca_certificate_ref",
      /no PEM certificate/,
    ],
    [
      "a ConfigMap in another namespace does not count",
      [
        configMap("far", { "ca.crt": PEM }, "other"),
        policy("p", { validation: { caCertificateRefs: refs("far"), hostname: "a.b" } }),
      ],
      "invalid_ca_certificate_ref",
      /shop\/far/,
    ],
    [
      "a CA reference to a Secret",
      [
        policy("p", {
          validation: {
            caCertificateRefs: [{ group: "", kind: "Secret", name: "ca" }],
            hostname: "a.b",
          },
        }),
      ],
      "invalid_kind",
      /only a core ConfigMap/,
    ],
    [
      "both CA refs and well-known CAs",
      [
        policy("p", {
          validation: {
            caCertificateRefs: refs("ca"),
            wellKnownCACertificates: "System",
            hostname: "a.b",
          },
        }),
      ],
      "invalid_value",
      /sets both/,
    ],
    [
      "neither CA refs nor well-known CAs",
      [policy("p", { validation: { hostname: "a.b" } })],
      "invalid_value",
      /sets neither/,
    ],
    [
      "an unknown well-known set",
      [policy("p", { validation: { wellKnownCACertificates: "Mozilla", hostname: "a.b" } })],
      "invalid_value",
      /must be System/,
    ],
    [
      "a wildcard hostname",
      [policy("p", { validation: { caCertificateRefs: refs("ca"), hostname: "*.shop" } })],
      "invalid_value",
      /not a DNS name/,
    ],
    [
      "an IP address as hostname",
      [policy("p", { validation: { caCertificateRefs: refs("ca"), hostname: "10.0.0.1" } })],
      "invalid_value",
      /no IP address/,
    ],
    [
      "no hostname",
      [policy("p", { validation: { caCertificateRefs: refs("ca") } })],
      "invalid_object",
      /hostname is required/,
    ],
    [
      "a Hostname SAN with a uri",
      [
        policy("p", {
          validation: {
            caCertificateRefs: refs("ca"),
            hostname: "a.b",
            subjectAltNames: [{ type: "Hostname", hostname: "a.b", uri: "x:y" }],
          },
        }),
      ],
      "invalid_value",
      /must not set uri/,
    ],
    [
      "a URI SAN without a scheme",
      [
        policy("p", {
          validation: {
            caCertificateRefs: refs("ca"),
            hostname: "a.b",
            subjectAltNames: [{ type: "URI", uri: "no-scheme" }],
          },
        }),
      ],
      "invalid_value",
      /not an absolute URI/,
    ],
    [
      "an unknown SAN type",
      [
        policy("p", {
          validation: {
            caCertificateRefs: refs("ca"),
            hostname: "a.b",
            subjectAltNames: [{ type: "IP" }],
          },
        }),
      ],
      "invalid_value",
      /Hostname or URI/,
    ],
    [
      "an unknown field",
      [policy("p", { validation: { caCertificateRefs: refs("ca"), hostname: "a.b", extra: 1 } })],
      "unsupported_field",
      /extra is not a known field/,
    ],
    [
      "targetRefs that are not distinct",
      [
        policy("p", {
          targets: [
            { group: "", kind: "Service", name: "web" },
            { group: "", kind: "Service", name: "web" },
          ],
        }),
      ],
      "invalid_value",
      /same target/,
    ],
    [
      "an unknown target Service",
      [policy("p", { targets: [{ group: "", kind: "Service", name: "ghost" }] })],
      "unknown_target",
      /shop\/ghost, which does not exist/,
    ],
    [
      "an unknown sectionName",
      [
        policy("p", {
          targets: [{ group: "", kind: "Service", name: "web", sectionName: "grpc" }],
        }),
      ],
      "unknown_target",
      /no port of that name/,
    ],
    [
      "two objects with one identity",
      [
        policy("p"),
        policy("p", { validation: { wellKnownCACertificates: "System", hostname: "a.b" } }),
      ],
      "duplicate_object",
      /several different BackendTLSPolicy/,
    ],
  ];
  for (const [name, extra, reason, message] of cases) {
    it(`${name}: ${reason}`, () => {
      const output = projectServices([...WORLD, ...extra]);
      expect(output.rejections.map((r) => [r.route.kind, r.route.name, r.reason])).toEqual([
        ["BackendTLSPolicy", "p", reason],
      ]);
      expect(output.rejections[0]?.message).toMatch(message);
      expect(ROUTE_REJECTION_REASONS).toContain(reason);
      expect(backendTlsOf([...WORLD, ...extra])).toEqual([]);
    });
  }

  it("a policy carried on one target is warned about the other, not rejected", () => {
    const p = policy("p", {
      targets: [
        { group: "", kind: "Service", name: "web" },
        { group: "", kind: "Service", name: "ghost" },
      ],
    });
    const output = projectServices([...WORLD, p]);
    expect(output.rejections).toEqual([]);
    expect(output.warnings.map((w) => w.reason)).toEqual(["unknown_target"]);
    expect(ROUTE_WARNING_REASONS).toContain("unknown_target");
    expect(backendTlsOf([...WORLD, p])).toEqual([{ ...CA, policyName: "p" }]);
  });

  it("a policy for a Service out of scope (not exported) is neither carried nor reported", () => {
    const p = policy("p", {
      targets: [{ group: "", kind: "Service", name: "api" }],
      validation: { hostname: "a.b" },
    });
    const output = projectServices([...WORLD, p]);
    expect(output.rejections).toEqual([]);
    expect(output.projections.map((x) => x.service)).toEqual([`${NS}/web`]);
  });
});

describe("projector: BackendTLSPolicy conflicts", () => {
  const cases: [string, KubeObject[], string, RegExp][] = [
    [
      "the older policy wins",
      [
        policy("b", { created: "2026-01-01T00:00:00Z" }),
        policy("a", { created: "2026-01-02T00:00:00Z" }),
      ],
      "b",
      /shop\/b also targets and wins \(it is older\)/,
    ],
    [
      "same age: first by name wins",
      [
        policy("b", { created: "2026-01-01T00:00:00Z" }),
        policy("a", { created: "2026-01-01T00:00:00Z" }),
      ],
      "a",
      /shop\/a also targets and wins \(it comes first by namespace\/name\)/,
    ],
    [
      "one without a creation time counts as newest",
      [policy("a"), policy("b", { created: "2026-01-01T00:00:00Z" })],
      "b",
      /is older/,
    ],
  ];
  for (const [name, extra, winner, message] of cases) {
    it(name, () => {
      const output = projectServices([...WORLD, ...extra]);
      expect(backendTlsOf([...WORLD, ...extra])).toEqual([{ ...CA, policyName: winner }]);
      expect(output.rejections.map((r) => r.reason)).toEqual(["conflicted"]);
      expect(output.rejections[0]?.route.name).not.toBe(winner);
      expect(output.rejections[0]?.message).toMatch(message);
      expect(output.rejections[0]?.services).toEqual([`${NS}/web`]);
    });
  }

  it("an invalid older policy does not take the target from a valid one", () => {
    const bad = policy("a", { created: "2026-01-01T00:00:00Z", validation: { hostname: "a.b" } });
    const good = policy("b", { created: "2026-01-02T00:00:00Z" });
    expect(backendTlsOf([...WORLD, bad, good])).toEqual([{ ...CA, policyName: "b" }]);
  });

  it("a loser on one Service still carried on another is warned, not rejected", () => {
    const both = policy("a", {
      created: "2026-01-02T00:00:00Z",
      targets: [
        { group: "", kind: "Service", name: "web" },
        { group: "", kind: "Service", name: "api" },
      ],
    });
    const older = policy("b", { created: "2026-01-01T00:00:00Z" });
    const objects = [...WORLD, serviceExport("api", NS), both, older];
    const output = projectServices(objects);
    expect(output.rejections).toEqual([]);
    expect(output.warnings.map((w) => [w.route.name, w.reason, w.services])).toEqual([
      ["a", "conflicted", [`${NS}/web`]],
    ]);
    expect(backendTlsOf(objects, `${NS}/api`)).toEqual([{ ...CA, policyName: "a" }]);
  });
});

describe("projector: BackendTLSPolicy determinism", () => {
  const bytes = (objects: KubeObject[]) =>
    projectServices(objects).projections.map((p) => toBinary(ServiceConfigProjectionSchema, p));

  it("the same objects in any order give the same bytes", () => {
    const objects = [
      ...WORLD,
      policy("b", { created: "2026-01-01T00:00:00Z" }),
      policy("a"),
      policy("c", { targets: [{ group: "", kind: "Service", name: "web", sectionName: "http" }] }),
    ];
    expect(bytes(objects)).toEqual(bytes([...objects].reverse()));
    expect(projectServices(objects).rejections).toEqual(
      projectServices([...objects].reverse()).rejections,
    );
  });

  it("a changed CA bundle changes the bytes", () => {
    const other = configMap("ca", { "ca.crt": PEM.replace("test", "else") });
    expect(bytes([...WORLD, policy("p")])).not.toEqual(
      bytes([...WORLD.slice(0, 3), other, policy("p")]),
    );
  });
});

/** One random edit of policies, ConfigMaps, Services and exports; never modifies an object. */
function edit(next: () => number, objects: readonly KubeObject[]): KubeObject[] {
  const pick = <T>(list: readonly T[]): T => list[Math.floor(next() * list.length)] as T;
  const names = ["web", "api", "db", "ghost"];
  const copy = [...objects];
  const replace = (kind: string, name: string, object: KubeObject | undefined) => {
    const at = copy.findIndex((o) => o.kind === kind && o.metadata?.name === name);
    if (object === undefined) {
      if (at >= 0) copy.splice(at, 1);
    } else if (at >= 0) copy[at] = object;
    else copy.push(object);
  };
  const roll = next();
  const name = pick(names);
  if (roll < 0.45) {
    const targets = [
      {
        group: "",
        kind: "Service",
        name,
        ...(next() < 0.3 ? { sectionName: pick(["http", "https", "grpc"]) } : {}),
      },
    ];
    if (next() < 0.3) targets.push({ group: "", kind: "Service", name: pick(names) });
    const validation =
      next() < 0.2
        ? { hostname: "a.b", wellKnownCACertificates: "System" }
        : {
            hostname: "a.b",
            caCertificateRefs: [
              { group: "", kind: "ConfigMap", name: pick(["ca", "ca2", "none"]) },
            ],
          };
    const created = `2026-01-0${1 + Math.floor(next() * 3)}T00:00:00Z`;
    replace(
      "BackendTLSPolicy",
      `p${Math.floor(next() * 4)}`,
      next() < 0.15 ? undefined : policy("x", { targets, validation, created }),
    );
    const last = copy.findIndex((o) => o.kind === "BackendTLSPolicy" && o.metadata?.name === "x");
    if (last >= 0) {
      const renamed = {
        ...(copy[last] as KubeObject),
        metadata: { ...(copy[last]?.metadata ?? {}), name: `p${Math.floor(next() * 4)}` },
      };
      copy.splice(last, 1);
      replace("BackendTLSPolicy", renamed.metadata.name as string, renamed);
    }
  } else if (roll < 0.65) {
    const cm = pick(["ca", "ca2"]);
    replace(
      "ConfigMap",
      cm,
      next() < 0.3
        ? undefined
        : configMap(
            cm,
            next() < 0.2 ? {} : { "ca.crt": PEM.replace("test", String(Math.floor(next() * 3))) },
          ),
    );
  } else if (roll < 0.8) {
    replace("Service", name, next() < 0.3 ? undefined : service(name));
  } else if (roll < 0.9) {
    replace("ServiceExport", name, next() < 0.4 ? undefined : serviceExport(name, NS));
  } else if (roll < 0.95) {
    // An HTTPRoute attaching to a Service brings it into scope under exportAll.
    const route: KubeObject = {
      apiVersion: GW,
      kind: "HTTPRoute",
      metadata: { namespace: NS, name: "r" },
      spec: { parentRefs: [{ group: "", kind: "Service", name }], rules: [{}] },
    };
    replace("HTTPRoute", "r", next() < 0.3 ? undefined : route);
  } else {
    // An HTTPFilter targeting one of the policies' Services, its ext_authz backend another (or a
    // missing one): the incremental projector tracks both kinds on the same projections.
    const filter: KubeObject = {
      apiVersion: "mesh.aether.dev/v1alpha1",
      kind: "HTTPFilter",
      metadata: { namespace: NS, name: "f" },
      spec: {
        targetRefs: [{ group: "", kind: "Service", name }],
        extAuthz: { backendRef: { name: pick(names), port: 443 } },
      },
    };
    replace("HTTPFilter", "f", next() < 0.3 ? undefined : filter);
  }
  return copy;
}

describe("incremental projector with BackendTLSPolicies", () => {
  for (const [label, options] of [
    ["exported services", {}],
    ["exportAll", { exportAll: true }],
  ] as const) {
    it(`adds up to the full projection, byte for byte, after every random edit: ${label}`, () => {
      let both = 0;
      const filler = Array.from({ length: 12 }, (_, i) => service(`filler${i}`, "other"));
      const incremental = checkIncrementalAgainstFull(options, [...WORLD, ...filler], edit, (p) => {
        if (p.httpFilters.length > 0 && p.backendTls.length > 0) both++;
      });
      expect(incremental).toBeGreaterThan(10 * 40 * 0.5);
      // Some projections carried an HTTP filter and backend TLS together.
      expect(both).toBeGreaterThan(0);
    });
  }
});
