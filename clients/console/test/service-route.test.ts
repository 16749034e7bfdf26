/** The Service view's routes: `#/service/NS/NAME`, the mesh record, and the list. */
import { describe, expect, it } from "vitest";
import { formatRoute, parseRoute } from "../src/route.js";

describe("the service routes", () => {
  const cases: { hash: string; service: string }[] = [
    { hash: "#/service/shop/checkout", service: "shop/checkout" },
    { hash: "#/service/@mesh", service: "@mesh" },
    { hash: "#/service/%40mesh", service: "@mesh" },
    { hash: "#/service", service: "" },
    { hash: "#/service/shop", service: "" },
  ];
  it.each(cases)("$hash names the service $service", ({ hash, service }) => {
    expect(parseRoute(hash)).toMatchObject({ view: "service", service });
  });

  it.each(["shop/checkout", "@mesh"])("formats %s so that it parses back", (service) => {
    expect(parseRoute(formatRoute({ view: "service", service })).service).toBe(service);
  });
});
