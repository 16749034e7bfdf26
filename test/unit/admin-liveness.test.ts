import { describe, expect, it } from "vitest";
import { livenessResponse, observeBeats } from "../../services/registrar/server/admin-liveness.js";
import { readinessResponse } from "../../services/registrar/server/admin-routes.js";

describe("observeBeats", () => {
  it.each([
    { name: "first reading", watch: undefined, beats: 7, now: 100, changedAt: 100 },
    {
      name: "the count moved",
      watch: { beats: 7, changedAtMs: 100 },
      beats: 8,
      now: 350,
      changedAt: 350,
    },
    {
      name: "the count stood still",
      watch: { beats: 7, changedAtMs: 100 },
      beats: 7,
      now: 900,
      changedAt: 100,
    },
    {
      name: "the count wrapped",
      watch: { beats: 2147483647, changedAtMs: 100 },
      beats: -2147483648,
      now: 400,
      changedAt: 400,
    },
  ])("$name", ({ watch, beats, now, changedAt }) => {
    expect(observeBeats(watch, beats, now)).toEqual({ beats, changedAtMs: changedAt });
  });
});

describe("livenessResponse", () => {
  const watch = { beats: 3, changedAtMs: 1_000 };
  it.each([
    { name: "just beat", now: 1_000, status: 200, body: "ok\n" },
    { name: "below the limit", now: 10_999, status: 200, body: "ok\n" },
    {
      name: "at the limit",
      now: 11_000,
      status: 503,
      body: "the main event loop has not turned for 10.0 s (limit 10.0 s)\n",
    },
    {
      name: "long stalled",
      now: 43_500,
      status: 503,
      body: "the main event loop has not turned for 42.5 s (limit 10.0 s)\n",
    },
  ])("$name", ({ now, status, body }) => {
    const answer = livenessResponse(watch, now, 10_000);
    expect(answer).toEqual({ status, contentType: "text/plain; charset=utf-8", body });
  });
});

describe("readinessResponse", () => {
  it.each([
    { readiness: { ready: true }, status: 200, body: "ready\n" },
    {
      readiness: { ready: true, degraded: "holding 3 deletes of hub" },
      status: 200,
      body: "ready, degraded: holding 3 deletes of hub\n",
    },
    { readiness: { ready: false, reason: "draining" }, status: 503, body: "draining\n" },
    { readiness: { ready: false }, status: 503, body: "not ready\n" },
  ])("$body", ({ readiness, status, body }) => {
    expect(readinessResponse(readiness)).toMatchObject({ status, body });
  });
});
