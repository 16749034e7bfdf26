/**
 * The policies of an HTTPRoute rule that say how a request is carried out
 * rather than where it goes: `timeouts` (GEP-1742) and `retry` (GEP-1731,
 * Standard since Gateway API v1.7), read and validated as the Gateway API
 * CRDs do, in one canonical form each. Invalid input throws a FieldError.
 * Pure, no I/O.
 */
import { create } from "@bufbuild/protobuf";
import { type Duration, DurationSchema } from "@bufbuild/protobuf/wkt";
import {
  type RouteRetry,
  RouteRetrySchema,
  type RouteTimeouts,
  RouteTimeoutsSchema,
} from "../../gen/aether/registry/v1/projection_pb.js";
import {
  describeType,
  fail,
  type JsonObject,
  optionalInteger,
  optionalList,
  optionalObject,
  optionalString,
  quote,
} from "./projector-fields.js";
import { parseGatewayDuration } from "./projector-syntax.js";

const INT32_MAX = 2_147_483_647;
/** The status codes a retry may name (`HTTPRouteRetryStatusCode`: 400 to 599). */
const RETRY_CODES = { min: 400, max: 599 };

/**
 * Reads `rules[].timeouts` at `path` (the rule's path). `timeouts: {}` reads
 * as no timeouts, its one canonical form. Throws `invalid_duration` for a
 * value that is not a GEP-2257 duration and `invalid_value` when
 * `backendRequest` is longer than a non-zero `request` (the CRD's CEL rule).
 */
export function readTimeouts(rule: JsonObject, path: string): RouteTimeouts | undefined {
  const timeouts = optionalObject(rule, "timeouts", path, {
    supported: ["request", "backendRequest"],
  });
  if (timeouts === undefined) return undefined;
  const at = `${path}.timeouts`;
  const request = readDuration(timeouts, "request", at);
  const backendRequest = readDuration(timeouts, "backendRequest", at);
  if (request === undefined && backendRequest === undefined) return undefined;
  if (request !== undefined && backendRequest !== undefined && request > 0) {
    if (backendRequest > request) {
      fail("invalid_value", `${at}.backendRequest must not be longer than ${at}.request`);
    }
  }
  return create(RouteTimeoutsSchema, {
    request: request === undefined ? undefined : durationOf(request),
    backendRequest: backendRequest === undefined ? undefined : durationOf(backendRequest),
  });
}

/**
 * Reads `rules[].retry` at `path` (the rule's path). Unlike timeouts,
 * `retry: {}` is kept: a rule with a retry stanza is retried on connection
 * errors. Its codes are sorted (the API declares them a set), so equal
 * policies project to equal bytes. Throws `invalid_value` for a code outside
 * 400 to 599, a repeated code or a negative `attempts` (0 turns retries
 * off), `invalid_object` for a value of the wrong type and
 * `invalid_duration` for a `backoff` that is not a GEP-2257 duration.
 */
export function readRetry(rule: JsonObject, path: string): RouteRetry | undefined {
  const retry = optionalObject(rule, "retry", path, {
    supported: ["codes", "attempts", "backoff"],
  });
  if (retry === undefined) return undefined;
  const at = `${path}.retry`;
  const span = RETRY_CODES.max - RETRY_CODES.min + 1;
  const codes: number[] = [];
  optionalList(retry, "codes", at, span).forEach((code, i) => {
    const where = `${at}.codes[${i}]`;
    if (typeof code !== "number" || !Number.isInteger(code)) {
      const actual = typeof code === "number" ? `the number ${code}` : describeType(code);
      fail("invalid_object", `${where} must be an integer, not ${actual}`);
    }
    if (code < RETRY_CODES.min || code > RETRY_CODES.max) {
      fail(
        "invalid_value",
        `${where} is ${code}; it must be an HTTP status code between ${RETRY_CODES.min} and ${RETRY_CODES.max}`,
      );
    }
    if (codes.includes(code)) fail("invalid_value", `${where} repeats the status code ${code}`);
    codes.push(code);
  });
  const backoff = readDuration(retry, "backoff", at);
  return create(RouteRetrySchema, {
    codes: codes.sort((a, b) => a - b),
    attempts: optionalInteger(retry, "attempts", at, { min: 0, max: INT32_MAX }),
    backoff: backoff === undefined ? undefined : durationOf(backoff),
  });
}

/**
 * Reads an optional GEP-2257 duration field (`10s`, `500ms`) as a Duration;
 * throws `invalid_duration` when it is not one.
 */
export function readDurationField(
  object: JsonObject,
  key: string,
  path: string,
): Duration | undefined {
  const millis = readDuration(object, key, path);
  return millis === undefined ? undefined : durationOf(millis);
}

function readDuration(object: JsonObject, key: string, path: string): number | undefined {
  const text = optionalString(object, key, path);
  if (text === undefined) return undefined;
  const millis = parseGatewayDuration(text);
  if (millis === undefined) {
    fail(
      "invalid_duration",
      `${path}.${key} ${quote(text)} is not a Gateway API duration (examples: 10s, 500ms, 1h30m)`,
    );
  }
  return millis;
}

function durationOf(millis: number): Duration {
  return create(DurationSchema, {
    seconds: BigInt(Math.floor(millis / 1000)),
    nanos: (millis % 1000) * 1_000_000,
  });
}
