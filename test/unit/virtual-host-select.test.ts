/**
 * Host-based service selection by VirtualHost names, table-driven: exact
 * before wildcard, a longer wildcard before a shorter, a wildcard never
 * matching its own suffix, port-scoped entries, case, ports and trailing
 * dots in the Host, and the same name on two services (across origins)
 * going to the first by namespace/name; then how aetherctl prints the names
 * (`get`) and the `virtual host` line of `explain`, whose URL host is looked
 * up only when it is not a service's DNS name.
 */
import { create } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { formatExplanation } from "../../clients/aetherctl/explain-format.js";
import { isServiceDnsName } from "../../clients/aetherctl/explain-request.js";
import { formatProjectionTree } from "../../clients/aetherctl/projection-tree.js";
import { describeVirtualHosts } from "../../clients/aetherctl/virtual-host-describe.js";
import {
  ServiceConfigProjectionSchema,
  VirtualHostSchema,
} from "../../gen/aether/registry/v1/projection_pb.js";
import { evaluate } from "../../services/common/evaluator.js";
import { serviceForHost } from "../../services/common/virtual-host-select.js";
import { explainTargetFromWeb } from "../support/explain-target.js";

const vh = (name: string, hostnames: string[], port = 0, sectionName = "") =>
  create(VirtualHostSchema, { namespace: "shop", name, hostnames, port, sectionName });

const cart = create(ServiceConfigProjectionSchema, {
  service: "shop/cart",
  originCluster: "hub",
  version: "2026-11-29T12:00:00.000000000Z",
  virtualHosts: [vh("cart-names", ["*.cart.shop.example", "cart.shop.example"])],
});
const web = create(ServiceConfigProjectionSchema, {
  service: "shop/web",
  virtualHosts: [
    vh("web-names", ["*.shop.example", "www.shop.example"]),
    vh("web-admin", ["admin.shop.example"], 9090, "admin"),
  ],
});
const twin = create(ServiceConfigProjectionSchema, {
  service: "other/cart",
  virtualHosts: [vh("twin", ["cart.shop.example"])],
});

describe("serviceForHost", () => {
  const cases: [string, string, number, string | undefined, string | undefined][] = [
    ["an exact name", "www.shop.example", 80, "shop/web", "www.shop.example"],
    [
      "exact before a wildcard that also matches",
      "cart.shop.example",
      80,
      "shop/cart",
      "cart.shop.example",
    ],
    ["the longer wildcard wins", "eu.cart.shop.example", 80, "shop/cart", "*.cart.shop.example"],
    ["a wildcard matches several labels", "a.b.shop.example", 80, "shop/web", "*.shop.example"],
    ["a wildcard never matches its own suffix", "shop.example", 80, undefined, undefined],
    [
      "case, port and trailing dot do not matter",
      "WWW.Shop.Example.:8080",
      80,
      "shop/web",
      "www.shop.example",
    ],
    [
      "a port-scoped name on its port",
      "admin.shop.example",
      9090,
      "shop/web",
      "admin.shop.example",
    ],
    [
      "a port-scoped name on another port: the wildcard",
      "admin.shop.example",
      80,
      "shop/web",
      "*.shop.example",
    ],
    ["no name matches", "example.com", 80, undefined, undefined],
    ["an IPv6 literal never matches", "[::1]:80", 80, undefined, undefined],
  ];
  for (const [name, host, port, service, hostname] of cases) {
    it(name, () => {
      const match = serviceForHost([cart, web], host, port);
      expect(match?.service).toBe(service);
      expect(match?.hostname).toBe(hostname);
    });
  }

  it("the same name on two services (two origins): the first by namespace/name, in any order", () => {
    expect(serviceForHost([cart, twin], "cart.shop.example")?.service).toBe("other/cart");
    expect(serviceForHost([twin, cart], "cart.shop.example")?.service).toBe("other/cart");
  });
});

describe("aetherctl and VirtualHost names", () => {
  it("get: a header line per projection, each VirtualHost with its port", () => {
    expect(describeVirtualHosts(web)).toBe(
      "*.shop.example, www.shop.example (every port, VirtualHost shop/web-names); admin.shop.example (port 9090 (admin), VirtualHost shop/web-admin)",
    );
    const tree = formatProjectionTree(cart, Date.parse("2026-11-29T12:00:00Z"), {
      keyId: undefined,
      algorithm: undefined,
      state: "unsigned",
    });
    expect(tree).toMatch(
      /\nvirtual hosts: +\*\.cart\.shop\.example, cart\.shop\.example \(every port, VirtualHost shop\/cart-names\)\n/,
    );
    expect(describeVirtualHosts(create(ServiceConfigProjectionSchema))).toBe("");
  });

  const target = (url: string) => explainTargetFromWeb(["GET", url]);

  const names: [string, boolean][] = [
    ["cart", true],
    ["cart.shop", true],
    ["cart.shop.svc.cluster.local", true],
    ["cart.shop.example", false],
    ["www.example.com", false],
  ];
  it.each(names)("%s is a service's DNS name: %s", (host, dns) => {
    expect(isServiceDnsName(host)).toBe(dns);
    const built = target(`http://${host}/`);
    expect(built.virtualHostName).toBe(dns ? undefined : host);
    expect(built.service === "").toBe(!dns);
  });

  it("an IP address is still refused", () => {
    expect(() => target("http://10.0.0.1/")).toThrow(/is an IP address/);
  });

  it("explain: the looked-up service's routes decide, and the virtual host line says why", () => {
    const built = target("http://eu.cart.shop.example:8080/basket");
    const match = serviceForHost([cart, web], built.virtualHostName ?? "", built.port);
    expect(match?.service).toBe("shop/cart");
    const resolved = {
      ...built,
      service: match?.service ?? "",
      virtualHost: { hostname: match?.hostname ?? "", virtualHost: "shop/cart-names" },
    };
    const decision = evaluate({
      projections: [cart],
      request: resolved.request,
      mesh: { service: resolved.service, port: resolved.port, callerNamespace: "web" },
    });
    const text = formatExplanation({
      target: resolved,
      projection: cart,
      view: "effective view",
      decision,
      random: "constant 0",
    });
    expect(text).toMatch(/\nservice: +shop\/cart port 8080\n/);
    expect(text).toMatch(
      /\nvirtual host: +eu\.cart\.shop\.example matches \*\.cart\.shop\.example \(VirtualHost shop\/cart-names\)\n/,
    );
  });
});
