/**
 * GetFleetStatus request checks: the limit's range and default, and the
 * filters' names, duplicates, counts and states.
 */
import { create } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { FleetState, GetFleetStatusRequestSchema } from "../../gen/aether/registry/v1/fleet_pb.js";
import { checkFleetRequest } from "../../services/common/fleet-request.js";

const request = (fields: Parameters<typeof create<typeof GetFleetStatusRequestSchema>>[1]) =>
  create(GetFleetStatusRequestSchema, fields);

describe("checkFleetRequest", () => {
  it.each([
    { name: "limit 0 means 100", fields: {}, limit: 100 },
    { name: "limit 1", fields: { limit: 1 }, limit: 1 },
    { name: "limit 1000", fields: { limit: 1000 }, limit: 1000 },
  ])("accepts $name", ({ fields, limit }) => {
    const check = checkFleetRequest(request(fields));
    expect(check).toEqual({
      ok: true,
      query: { services: undefined, clusters: undefined, states: undefined, limit },
    });
  });

  it("returns the filters as sets", () => {
    const check = checkFleetRequest(
      request({
        services: ["shop/cart", "@mesh"],
        clusters: ["east"],
        states: [FleetState.BEHIND, FleetState.STALE],
      }),
    );
    expect(check.ok && check.query.services).toEqual(new Set(["shop/cart", "@mesh"]));
    expect(check.ok && check.query.clusters).toEqual(new Set(["east"]));
    expect(check.ok && check.query.states).toEqual(new Set([FleetState.BEHIND, FleetState.STALE]));
  });

  it.each([
    { name: "a negative limit", fields: { limit: -1 }, problem: /limit -1 must be 0 to 1000/ },
    { name: "a limit over 1000", fields: { limit: 1001 }, problem: /limit 1001/ },
    { name: "a bad service", fields: { services: ["cart"] }, problem: /services: service "cart"/ },
    {
      name: "a duplicate service",
      fields: { services: ["shop/cart", "shop/cart"] },
      problem: /services names "shop\/cart" twice/,
    },
    {
      name: "too many services",
      fields: { services: Array.from({ length: 10_001 }, (_, i) => `ns/s${i}`) },
      problem: /services names 10001 values; at most 10000/,
    },
    {
      name: "a bad cluster",
      fields: { clusters: ["East"] },
      problem: /clusters: cluster name "East"/,
    },
    {
      name: "a duplicate cluster",
      fields: { clusters: ["east", "east"] },
      problem: /clusters names "east" twice/,
    },
    {
      name: "too many clusters",
      fields: { clusters: Array.from({ length: 1001 }, (_, i) => `c${i}`) },
      problem: /clusters names 1001 values; at most 1000/,
    },
    {
      name: "an unspecified state",
      fields: { states: [FleetState.UNSPECIFIED] },
      problem: /states: state 0 is not one of/,
    },
    { name: "an unknown state", fields: { states: [9 as FleetState] }, problem: /state 9/ },
    {
      name: "a duplicate state",
      fields: { states: [FleetState.BEHIND, FleetState.BEHIND] },
      problem: /states names 2 twice/,
    },
  ])("refuses $name", ({ fields, problem }) => {
    const check = checkFleetRequest(request(fields));
    expect(check.ok).toBe(false);
    expect(check.ok ? "" : check.problem).toMatch(problem);
  });
});
