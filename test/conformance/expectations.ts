/**
 * Compares what a harness observed with a corpus case's `expect`, following
 * the corpus README ("Only the keys present are asserted"), and runs the
 * statistical checks (weights, mirror percentages, per-backend headers) with
 * a seeded random source so that they are deterministic.
 */
import { headerValue } from "../../services/common/evaluator.js";
import { mulberry32 } from "../../services/common/mulberry32.js";
import type { CorpusCase, CorpusFile, Expectation, GatewayRequest } from "./corpus.js";
import type { Observed } from "./observed.js";

/** Evaluates the case's request once with the given random source. */
export type Runner = (random: () => number) => Observed;

/** A deterministic PRNG (mulberry32) returning numbers in [0, 1). */
export const seededRandom: (seed: number) => () => number = mulberry32;

/** A 32-bit FNV-1a hash, to derive a case's seed from its id. */
export function hashSeed(text: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return hash >>> 0;
}

const DEFAULT_SAMPLES = 500;
const MIRROR_SAMPLES = 500;

function show(value: unknown): string {
  return JSON.stringify(value);
}

function is2xx(status: number): boolean {
  return status >= 200 && status < 300;
}

/** The workload name a weighted sample is counted under. */
function servedName(observed: Observed): string {
  return observed.servedBy === undefined ? "(none)" : observed.servedBy.workloads.join("|");
}

function checkStatus(expect: Expectation, observed: Observed, failures: string[]): void {
  if (expect.grpcStatus !== undefined && observed.grpcStatus !== expect.grpcStatus) {
    failures.push(`grpcStatus: want ${expect.grpcStatus}, got ${show(observed.grpcStatus)}`);
  }
  if (expect.status !== undefined) {
    const allowed = typeof expect.status === "number" ? [expect.status] : expect.status;
    if (!allowed.includes(observed.status)) {
      failures.push(`status: want ${allowed.join(" or ")}, got ${observed.status}`);
    }
  }
}

function checkBackend(expect: Expectation, observed: Observed, failures: string[]): void {
  if (expect.backend === null && observed.servedBy !== undefined) {
    failures.push(`backend: want none, got ${servedName(observed)}`);
  }
  if (typeof expect.backend === "string") {
    const served = observed.servedBy;
    const prefix = expect.backend;
    if (served === undefined || !served.workloads.every((w) => w.startsWith(prefix))) {
      failures.push(`backend: want ${prefix}, got ${servedName(observed)}`);
    }
  }
  if (expect.namespace !== undefined && observed.servedBy?.namespace !== expect.namespace) {
    failures.push(`namespace: want ${expect.namespace}, got ${show(observed.servedBy?.namespace)}`);
  }
}

function checkForwarded(
  file: CorpusFile,
  testCase: CorpusCase,
  observed: Observed,
  failures: string[],
): void {
  const { expect } = testCase;
  const reached = observed.servedBy !== undefined && is2xx(observed.status);
  const gateway = file.profile === "gateway" ? (testCase.request as GatewayRequest) : undefined;
  const wantPath =
    expect.rewrittenPath ??
    (gateway !== undefined && gateway.grpc === undefined ? gateway.path : undefined);
  if (reached && wantPath !== undefined && observed.forwarded?.path !== wantPath) {
    failures.push(`path at the backend: want ${wantPath}, got ${show(observed.forwarded?.path)}`);
  }
  const wantHost =
    expect.rewrittenHost ??
    (gateway?.grpc === undefined ? (gateway?.host ?? undefined) : undefined);
  if (reached && wantHost !== undefined && observed.forwarded?.host !== wantHost) {
    failures.push(`Host at the backend: want ${wantHost}, got ${show(observed.forwarded?.host)}`);
  }
}

function checkHeaders(expect: Expectation, observed: Observed, failures: string[]): void {
  for (const [name, want] of Object.entries(expect.requestHeaders ?? {})) {
    const got = headerValue(observed.requestHeaders, name);
    if (got !== want) failures.push(`request header ${name}: want ${show(want)}, got ${show(got)}`);
  }
  for (const name of expect.absentRequestHeaders ?? []) {
    const got = headerValue(observed.requestHeaders, name);
    if (got !== undefined) failures.push(`request header ${name}: want absent, got ${show(got)}`);
  }
  const squash = (value: string | undefined) =>
    expect.ignoreWhitespaceInResponseHeaders === true ? value?.replace(/\s+/g, "") : value;
  for (const [name, want] of Object.entries(expect.responseHeaders ?? {})) {
    const got = headerValue(observed.responseHeaders, name);
    if (squash(got) !== squash(want)) {
      failures.push(`response header ${name}: want ${show(want)}, got ${show(got)}`);
    }
  }
  for (const [name, options] of Object.entries(expect.responseHeadersOneOf ?? {})) {
    const got = squash(headerValue(observed.responseHeaders, name));
    if (got === undefined || !options.some((option) => squash(option) === got)) {
      failures.push(`response header ${name}: want one of ${show(options)}, got ${show(got)}`);
    }
  }
  for (const name of expect.absentResponseHeaders ?? []) {
    const got = headerValue(observed.responseHeaders, name);
    if (got !== undefined) failures.push(`response header ${name}: want absent, got ${show(got)}`);
  }
}

function checkRedirect(expect: Expectation, observed: Observed, failures: string[]): void {
  const want = expect.redirect;
  if (want === undefined) return;
  if (observed.location === undefined) {
    failures.push(`redirect: want a Location, got none`);
    return;
  }
  const url = new URL(observed.location);
  const scheme = url.protocol.replace(/:$/, "");
  const wellKnown = scheme === "https" ? 443 : 80;
  const port = url.port === "" ? wellKnown : Number(url.port);
  const problems = [
    scheme !== want.scheme ? `scheme ${scheme}` : "",
    want.host !== undefined && url.hostname !== want.host ? `host ${url.hostname}` : "",
    port !== (want.port ?? wellKnown) ? `port ${port}` : "",
    url.pathname !== want.path ? `path ${url.pathname}` : "",
  ].filter((p) => p !== "");
  if (problems.length > 0) {
    failures.push(
      `redirect: want ${show(want)}, got ${observed.location} (${problems.join(", ")})`,
    );
  }
}

function checkMirrors(
  expect: Expectation,
  observed: Observed,
  run: Runner,
  random: () => number,
  failures: string[],
): void {
  for (const mirror of expect.mirroredTo ?? []) {
    const service = `${mirror.namespace}/${mirror.name}`;
    if (mirror.percent === undefined) {
      if (!observed.mirroredTo.includes(service)) {
        failures.push(`mirror: want a copy to ${service}, got ${show(observed.mirroredTo)}`);
      }
      continue;
    }
    if (observed.mirrorPercent[service] !== mirror.percent) {
      failures.push(
        `mirror ${service}: want ${mirror.percent}%, configured ${show(observed.mirrorPercent[service])}`,
      );
    }
    const p = mirror.percent / 100;
    let copies = 0;
    for (let i = 0; i < MIRROR_SAMPLES; i++) {
      if (run(random).mirroredTo.includes(service)) copies++;
    }
    const mean = MIRROR_SAMPLES * p;
    const sigma = Math.sqrt(MIRROR_SAMPLES * p * (1 - p));
    if (Math.abs(copies - mean) > 3 * sigma) {
      failures.push(
        `mirror ${service}: ${copies}/${MIRROR_SAMPLES} copies, want ${mean} ± ${(3 * sigma).toFixed(1)}`,
      );
    }
  }
}

/**
 * Evaluates the request `samples` times and returns the observations, or the
 * first sample's problem (as a failure sentence) when `problemOf` finds one.
 */
function sample(
  run: Runner,
  random: () => number,
  samples: number,
  problemOf: (observed: Observed) => string | undefined,
): Observed[] | string {
  const observations: Observed[] = [];
  for (let i = 0; i < samples; i++) {
    const observed = run(random);
    const problem = problemOf(observed);
    if (problem !== undefined) return `sample ${i}: ${problem}`;
    observations.push(observed);
  }
  return observations;
}

function checkWeights(
  expect: Expectation,
  run: Runner,
  random: () => number,
  failures: string[],
): void {
  const weights = expect.weights;
  if (weights === undefined) return;
  const samples = expect.samples ?? DEFAULT_SAMPLES;
  const tolerance = expect.weightTolerance ?? 0.05;
  const observations = sample(run, random, samples, (observed) => {
    const problems: string[] = [];
    checkStatus(expect, observed, problems);
    if (expect.namespace !== undefined && observed.servedBy?.namespace !== expect.namespace) {
      problems.push(
        `namespace: want ${expect.namespace}, got ${show(observed.servedBy?.namespace)}`,
      );
    }
    return problems.length === 0 ? undefined : problems.join("; ");
  });
  if (typeof observations === "string") {
    failures.push(observations);
    return;
  }
  const counts = new Map<string, number>();
  for (const observed of observations) {
    const name = servedName(observed);
    counts.set(name, (counts.get(name) ?? 0) + 1);
  }
  for (const [name, count] of counts) {
    if (!(name in weights)) failures.push(`weights: ${count} requests served by unlisted ${name}`);
  }
  for (const [name, share] of Object.entries(weights)) {
    const got = (counts.get(name) ?? 0) / samples;
    const bad = share === 0 ? got !== 0 : Math.abs(got - share) > tolerance;
    if (bad) failures.push(`weights: ${name} got ${got.toFixed(3)}, want ${share} ± ${tolerance}`);
  }
}

function checkHeaderEqualsBackend(
  expect: Expectation,
  run: Runner,
  random: () => number,
  failures: string[],
): void {
  const name = expect.requestHeaderEqualsBackend;
  if (name === undefined) return;
  const result = sample(run, random, expect.samples ?? DEFAULT_SAMPLES, (observed) => {
    const values = observed.requestHeaders[name.toLowerCase()] ?? [];
    const value = values[0];
    const workloads = observed.servedBy?.workloads ?? [];
    if (value === undefined || values.length !== 1) return `${values.length} values of ${name}`;
    return workloads.length > 0 && workloads.every((w) => w.startsWith(value))
      ? undefined
      : `${name}: ${show(value)} but served by ${servedName(observed)}`;
  });
  if (typeof result === "string") failures.push(result);
}

/**
 * Runs a case and returns every way the observation differs from `expect`
 * (empty when it passes). The first observation uses a random source seeded
 * from the case id; statistical checks continue with that source.
 */
export function checkCase(file: CorpusFile, testCase: CorpusCase, run: Runner): string[] {
  const random = seededRandom(hashSeed(testCase.id));
  const { expect } = testCase;
  const observed = run(random);
  const failures: string[] = [];
  checkStatus(expect, observed, failures);
  checkBackend(expect, observed, failures);
  checkForwarded(file, testCase, observed, failures);
  checkHeaders(expect, observed, failures);
  checkRedirect(expect, observed, failures);
  checkMirrors(expect, observed, run, random, failures);
  checkWeights(expect, run, random, failures);
  checkHeaderEqualsBackend(expect, run, random, failures);
  if (failures.length > 0) failures.push(`(evaluator: ${observed.reason})`);
  return failures;
}
