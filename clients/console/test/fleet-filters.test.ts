/** The fleet view's filters: from and to the URL's query, and what GetFleetStatus is asked. */
import { describe, expect, it } from "vitest";
import { FleetState } from "../../../gen/aether/registry/v1/fleet_pb.js";
import { formatRoute, parseRoute } from "../src/route.js";
import {
  FLEET_LIMIT,
  filterQuery,
  filtersOf,
  fleetRequest,
  NO_FILTERS,
  serviceMatches,
} from "../src/views/fleet/fleet-filters.js";

describe("fleet filters", () => {
  it("read the URL's query and write it back the same", () => {
    const hash = "#/fleet?ns=shop&q=cart&cluster=east&state=behind";
    const filters = filtersOf(parseRoute(hash).query);
    expect(filters).toEqual({ ns: "shop", q: "cart", cluster: "east", state: "behind" });
    expect(formatRoute({ view: "fleet", query: filterQuery(filters) })).toBe(hash);
  });

  it("leave empty ones out of the URL and ignore an unknown state", () => {
    expect(formatRoute({ view: "fleet", query: filterQuery({ ...NO_FILTERS, q: "a b" }) })).toBe(
      "#/fleet?q=a+b",
    );
    expect(filtersOf(parseRoute("#/fleet?state=sideways&ns=%20web%20").query)).toEqual({
      ...NO_FILTERS,
      ns: "web",
    });
  });

  it("send the cluster and state to the server, always at the largest limit", () => {
    expect(fleetRequest(NO_FILTERS)).toMatchObject({
      clusters: [],
      states: [],
      services: [],
      limit: FLEET_LIMIT,
    });
    expect(
      fleetRequest({ ...NO_FILTERS, cluster: "east", state: "rejecting", q: "cart" }),
    ).toMatchObject({
      ...{ clusters: ["east"], states: [FleetState.REJECTING], services: [], limit: 1000 },
    });
  });

  const cases: [string, Partial<typeof NO_FILTERS>, boolean][] = [
    ["shop/cart", {}, true],
    ["shop/cart", { ns: "shop" }, true],
    ["shop/cart", { ns: "sho" }, false],
    ["shopping/cart", { ns: "shop" }, false],
    ["shop/cart", { q: "p/Ca" }, true],
    ["shop/cart", { ns: "shop", q: "checkout" }, false],
    ["@mesh", { q: "mesh" }, true],
  ];
  for (const [service, filters, matches] of cases) {
    it(`${service} ${JSON.stringify(filters)} -> ${matches}`, () => {
      expect(serviceMatches(service, { ...NO_FILTERS, ...filters })).toBe(matches);
    });
  }
});
