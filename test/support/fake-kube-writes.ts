/**
 * The write half of the FAKE Kubernetes API server (`fake-kube-api.ts`), for
 * tests only: what a PATCH or PUT of an object, or of its `status`
 * subresource, does to the stored object, decided the way the real API
 * server decides it:
 * - PATCH takes `application/merge-patch+json` (RFC 7386; a list in the
 *   patch replaces the list). Other patch types are answered 415 (the real
 *   server takes JSON patch and server-side apply too, and strategic merge
 *   for built-in kinds; the fake implements none of them).
 * - A `metadata.resourceVersion` in the body is a precondition: another
 *   value than the stored one is a 409 `Conflict`. PUT without one is an
 *   unconditional update (as for custom resources).
 * - For a kind with the status subresource, a write of `.../status` changes
 *   only `.status` (spec and metadata in the body are ignored), and a write
 *   of the object itself changes everything but `.status`. The server's
 *   metadata (uid, creationTimestamp, generation, resourceVersion, name,
 *   namespace) is never taken from the body.
 * - A write that changes nothing is answered with the stored object and
 *   does not bump the resourceVersion (no watch event), as on the real server.
 * - 404 for an absent object, or `/status` of a kind without the subresource.
 */
import type { KubeObject } from "../../services/common/kube-object.js";
import { canonicalJson } from "../../services/common/projector-index.js";

/** A write request the fake received for one object. */
export interface WriteRequest {
  /** `PATCH` or `PUT`. */
  readonly method: string;
  /** True for `.../NAME/status`. */
  readonly status: boolean;
  /** The request's Content-Type. */
  readonly contentType: string;
  /** The request body, as sent. */
  readonly body: string;
  /** Whether the kind has the status subresource. */
  readonly hasStatusSubresource: boolean;
  /** The stored object, or undefined when there is none. */
  readonly existing: KubeObject | undefined;
  /** The resource as the API names it in messages, for example `httproutes.gateway.networking.k8s.io`. */
  readonly what: string;
  /** The object's name from the path. */
  readonly name: string;
}

/** What to answer: the object to store (when changed) or an error `Status`. */
export type WriteOutcome =
  | { readonly code: 200; readonly object: KubeObject; readonly changed: boolean }
  | { readonly code: number; readonly reason: string; readonly message: string };

type Json = Record<string, unknown>;

const isObject = (value: unknown): value is Json =>
  typeof value === "object" && value !== null && !Array.isArray(value);

/** RFC 7386 JSON merge patch of `target` by `patch` (a new value; neither is changed). */
export function mergePatch(target: unknown, patch: unknown): unknown {
  if (!isObject(patch)) return structuredClone(patch);
  const result: Json = isObject(target) ? { ...target } : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete result[key];
    else result[key] = mergePatch(result[key], value);
  }
  return result;
}

/** The metadata fields only the server sets. */
const SERVER_FIELDS = [
  "uid",
  "creationTimestamp",
  "generation",
  "resourceVersion",
  "name",
  "namespace",
];

/** Decides a write (see the module comment). */
export function decideWrite(request: WriteRequest): WriteOutcome {
  const { existing, what, name } = request;
  if (existing === undefined || (request.status && !request.hasStatusSubresource)) {
    return { code: 404, reason: "NotFound", message: `${what} "${name}" not found` };
  }
  if (request.method === "PATCH" && request.contentType !== "application/merge-patch+json") {
    const message = `the fake takes only application/merge-patch+json, not ${request.contentType}`;
    return { code: 415, reason: "UnsupportedMediaType", message };
  }
  let body: unknown;
  try {
    body = JSON.parse(request.body);
  } catch (error) {
    return { code: 400, reason: "BadRequest", message: (error as Error).message };
  }
  if (!isObject(body))
    return { code: 400, reason: "BadRequest", message: "the body is not an object" };
  const metadata = isObject(body.metadata) ? body.metadata : {};
  const stored = existing.metadata?.resourceVersion;
  if (metadata.resourceVersion !== undefined && metadata.resourceVersion !== stored) {
    const message = `Operation cannot be fulfilled on ${what} "${name}": the object has been modified; please apply your changes to the latest version and try again`;
    return { code: 409, reason: "Conflict", message };
  }
  if (request.method === "PUT" && (metadata.name !== name || body.kind !== existing.kind)) {
    return { code: 400, reason: "BadRequest", message: "the body names another object" };
  }
  const source = (request.method === "PATCH" ? mergePatch(existing, body) : body) as Json;
  const before = existing as Json;
  let next: Json;
  if (request.status) {
    next = { ...structuredClone(before) };
    if (source.status === undefined) delete next.status;
    else next.status = structuredClone(source.status);
  } else {
    next = { ...structuredClone(source) };
    const merged: Json = isObject(source.metadata) ? { ...source.metadata } : {};
    for (const key of SERVER_FIELDS) {
      const value = (before.metadata as Json | undefined)?.[key];
      if (value === undefined) delete merged[key];
      else merged[key] = value;
    }
    next.metadata = merged;
    next.apiVersion = before.apiVersion;
    next.kind = before.kind;
    if (request.hasStatusSubresource) {
      if (before.status === undefined) delete next.status;
      else next.status = structuredClone(before.status);
    }
  }
  return {
    code: 200,
    object: next as KubeObject,
    changed: canonicalJson(next) !== canonicalJson(before),
  };
}
