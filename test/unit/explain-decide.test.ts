import { create } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import {
  type ServiceConfigProjection,
  ServiceConfigProjectionSchema,
  VirtualHostSchema,
} from "../../gen/aether/registry/v1/projection_pb.js";
import { explainInView } from "../../services/common/explain-decide.js";
import { buildExplainTarget } from "../../services/common/explain-target.js";
import { makeProjection, meshRecord } from "../support/projections.js";

/** shop/cart, named `www.cart.example` by a VirtualHost, routed to shop/cart-v1 (which has TLS on 80). */
const cart = makeProjection("shop/cart", { backend: "shop/cart-v1", origin: "hub" });
cart.virtualHosts = [
  create(VirtualHostSchema, {
    ...{ port: 0, hostnames: ["www.cart.example"], namespace: "shop", name: "cart-names" },
  }),
];
const cartV1 = create(ServiceConfigProjectionSchema, {
  service: "shop/cart-v1",
  originCluster: "hub",
  backendTls: [{ port: 80, hostname: "cart-v1.shop.svc" }],
});
const mesh = meshRecord({ requestTimeout: { seconds: 7n } });

const target = (url: string) =>
  buildExplainTarget({
    positionals: ["GET", url],
    fromNamespace: "web",
    port: undefined,
    portName: undefined,
    headers: [],
    grpc: undefined,
  });

describe("explainInView: one decision over a whole view", () => {
  it.each<[string, string, readonly ServiceConfigProjection[], Record<string, unknown>]>([
    [
      "a VirtualHost name selects its service; the backend's TLS comes from the backend's projection",
      "http://www.cart.example/",
      [cart, cartV1],
      {
        target: { service: "shop/cart", virtualHost: { virtualHost: "shop/cart-names" } },
        decision: { outcome: "forwarded", backend: { service: "shop/cart-v1", port: 80 } },
        backendTls: { hostname: "cart-v1.shop.svc" },
        meshRecord: undefined,
      },
    ],
    [
      "the @mesh record's defaults apply and are named",
      "http://cart.shop/",
      [cart, mesh],
      {
        meshRecord: { service: "@mesh" },
        decision: { requestTimeout: { ms: 7000, source: "mesh" } },
        backendTls: undefined,
      },
    ],
    [
      "a service the view has no config for goes to itself",
      "http://other.shop:81/",
      [cart],
      {
        projection: undefined,
        decision: { outcome: "passthrough", backend: { service: "shop/other", port: 81 } },
      },
    ],
  ])("%s", (_, url, view, expected) => {
    expect(explainInView(target(url), view, () => 0)).toMatchObject(expected);
  });

  it("refuses a host no service's DNS name and no VirtualHost names, with aetherctl's reason", () => {
    expect(() => explainInView(target("http://nobody.shop.example/"), [cart], () => 0)).toThrow(
      expect.objectContaining({ name: "ExplainInputError", field: "url" }),
    );
    expect(() => explainInView(target("http://nobody.shop.example/"), [cart], () => 0)).toThrow(
      /no VirtualHost names it for port 80/,
    );
  });
});
