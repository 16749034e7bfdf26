/**
 * The bytes an origin signs for a projection, and how a verifier recovers
 * them, exactly as `ProjectionSignature` in `projection.proto` documents:
 * a context string, the origin, and the stored encoding without its
 * `origin_cluster` (2) and `signature` (15) records. Pure, no I/O and no
 * cryptography (the registrar and the agent sign and verify with Node's
 * `crypto`, a browser could with WebCrypto).
 */
import { fromBinary, toBinary } from "@bufbuild/protobuf";
import {
  type ProjectionSignature,
  ProjectionSignatureSchema,
  type ServiceConfigProjection,
  ServiceConfigProjectionSchema,
  SignatureAlgorithm,
} from "../../gen/aether/registry/v1/projection_pb.js";
import { fieldSpans } from "./wire-fields.js";

/** The context string that starts the signed bytes (domain separation). */
export const SIGNATURE_CONTEXT = "aether.registry.v1.ServiceConfigProjection";

/** The field number of `origin_cluster` in `ServiceConfigProjection`. */
const ORIGIN_FIELD = 2;
/** The field number of `signature` in `ServiceConfigProjection`. */
export const SIGNATURE_FIELD = 15;

const utf8 = new TextEncoder();

/**
 * Returns the bytes signed for `content` (a projection's encoding without
 * its origin and signature records) exported by `origin`.
 */
export function signedBytes(origin: string, content: Uint8Array): Uint8Array {
  const context = utf8.encode(SIGNATURE_CONTEXT);
  const name = utf8.encode(origin);
  const out = new Uint8Array(context.length + 1 + name.length + 1 + content.length);
  out.set(context, 0);
  out.set(name, context.length + 1);
  out.set(content, context.length + 1 + name.length + 1);
  return out;
}

/** A stored projection split into what was signed and the signature it carries. */
export type SignedParts =
  | {
      /** The encoding without origin and signature records (see {@link signedBytes}). */
      readonly content: Uint8Array;
      /** The signature, undefined when the value carries none. */
      readonly signature: ProjectionSignature | undefined;
      readonly problem?: undefined;
    }
  | {
      readonly content?: undefined;
      readonly signature?: undefined;
      /** Why the value cannot be verified (malformed bytes, two signature records). */
      readonly problem: string;
    };

/**
 * Splits a stored value into its signed content and its signature, reading
 * only the top-level records (nothing else is decoded). The content keeps
 * every other record byte for byte, in order.
 */
export function splitStoredValue(value: Uint8Array): SignedParts {
  const kept: Uint8Array[] = [];
  let signatureBytes: Uint8Array | undefined;
  for (const span of fieldSpans(value)) {
    if (span === undefined) return { problem: "the value is not a well-formed protobuf message" };
    if (span.field === SIGNATURE_FIELD) {
      if (signatureBytes !== undefined) return { problem: "the value has two signature records" };
      if (span.wireType !== 2) return { problem: "the signature record is not length-delimited" };
      signatureBytes = value.subarray(span.valueStart, span.end);
    } else if (span.field !== ORIGIN_FIELD) {
      kept.push(value.subarray(span.start, span.end));
    }
  }
  let signature: ProjectionSignature | undefined;
  if (signatureBytes !== undefined) {
    try {
      signature = fromBinary(ProjectionSignatureSchema, signatureBytes);
    } catch {
      return { problem: "the signature record does not decode" };
    }
  }
  return { content: concat(kept), signature };
}

/**
 * Splits a decoded projection the same way, by re-encoding it with
 * `originCluster` empty and no `signature` (the canonical encoding every
 * writer produces, so the same bytes the origin signed).
 */
export function splitDecoded(projection: ServiceConfigProjection): SignedParts {
  const content = toBinary(ServiceConfigProjectionSchema, {
    ...projection,
    originCluster: "",
    signature: undefined,
  });
  return { content, signature: projection.signature };
}

/**
 * Returns `value` (a stored encoding) with its signature records replaced by
 * `signature`, appended as the last record; every other record is kept.
 */
export function withSignature(value: Uint8Array, signature: ProjectionSignature): Uint8Array {
  const kept: Uint8Array[] = [];
  for (const span of fieldSpans(value)) {
    if (span === undefined) throw new TypeError("the value is not a well-formed protobuf message");
    if (span.field !== SIGNATURE_FIELD) kept.push(value.subarray(span.start, span.end));
  }
  const body = toBinary(ProjectionSignatureSchema, signature);
  kept.push(new Uint8Array([(SIGNATURE_FIELD << 3) | 2, ...varint(body.length)]), body);
  return concat(kept);
}

/** The varint encoding of a non-negative length. */
function varint(n: number): number[] {
  const out: number[] = [];
  for (; n >= 0x80; n = Math.floor(n / 128)) out.push((n & 0x7f) | 0x80);
  out.push(n);
  return out;
}

function concat(parts: readonly Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((sum, part) => sum + part.length, 0));
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}

/** The name operators see for an algorithm (`ed25519`, `ecdsa-p256-sha256`). */
export function algorithmName(algorithm: SignatureAlgorithm): string {
  switch (algorithm) {
    case SignatureAlgorithm.ED25519:
      return "ed25519";
    case SignatureAlgorithm.ECDSA_P256_SHA256:
      return "ecdsa-p256-sha256";
    default:
      return `unknown (${algorithm})`;
  }
}
