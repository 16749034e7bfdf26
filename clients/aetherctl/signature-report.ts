/**
 * Who signed a projection and whether its signature holds, as `aetherctl
 * get` and `list` show it. The verdict comes from the shared check in
 * `services/common/signature-check.ts` (with every signed projection held to
 * the `--origin-keys` file when one is given); this module turns it into the
 * states operators read (`verified`, `bad signature`, `unknown key`,
 * `unsigned`, `not checked (no --origin-keys)`) and their table, tree and
 * JSON forms. Pure: the cryptography is inside the check it is given.
 */
import type { ServiceConfigProjection } from "../../gen/aether/registry/v1/projection_pb.js";
import { algorithmName, splitDecoded } from "../../services/common/projection-signature.js";
import type { SignatureCheck } from "../../services/common/signature-check.js";

/** The states of a projection's signature, as `-o json` names them. */
export type SignatureState =
  | "verified"
  | "bad_signature"
  | "unknown_key"
  | "unsigned"
  | "not_checked";

/** What aetherctl shows about one projection's signature. */
export interface SignatureReport {
  /** The signing key's id; undefined when the projection is unsigned. */
  readonly keyId: string | undefined;
  /** The algorithm's name (`ed25519`, `ecdsa-p256-sha256`); undefined when unsigned. */
  readonly algorithm: string | undefined;
  /** The outcome. */
  readonly state: SignatureState;
}

/** The words the tree and the table use for each state. */
export const SIGNATURE_STATE_TEXT: Readonly<Record<SignatureState, string>> = {
  verified: "verified",
  bad_signature: "bad signature",
  unknown_key: "unknown key",
  unsigned: "unsigned",
  not_checked: "not checked (no --origin-keys)",
};

/**
 * Reports on `projection`'s signature (the one its `originCluster` signed).
 * `check` is undefined without `--origin-keys`: a signed projection is then
 * `not_checked`. A check must treat unsigned projections and unknown keys as
 * rejections (`require: true`), so that a key the file lacks is `unknown_key`
 * rather than passing unchecked.
 */
export function reportSignature(
  projection: ServiceConfigProjection,
  check: SignatureCheck | undefined,
): SignatureReport {
  const signature = projection.signature;
  if (signature === undefined) return { keyId: undefined, algorithm: undefined, state: "unsigned" };
  const signed = { keyId: signature.keyId, algorithm: algorithmName(signature.algorithm) };
  if (check === undefined) return { ...signed, state: "not_checked" };
  const verdict = check.judge(
    projection.originCluster,
    projection.service,
    splitDecoded(projection),
  );
  switch (verdict.kind) {
    case "verified":
      return { ...signed, state: "verified" };
    case "rejected":
      return { ...signed, state: verdict.reason === "unsigned" ? "unsigned" : verdict.reason };
    default:
      // `unsigned` and `unchecked` need a check that does not require signatures.
      return { ...signed, state: "not_checked" };
  }
}

/**
 * The `signed:` line of `aetherctl get`: `unsigned`, or `key KEYID of ORIGIN
 * (ALGORITHM): STATE`.
 */
export function describeSignature(report: SignatureReport, origin: string): string {
  if (report.keyId === undefined) return SIGNATURE_STATE_TEXT[report.state];
  return `key ${report.keyId} of ${origin} (${report.algorithm}): ${SIGNATURE_STATE_TEXT[report.state]}`;
}

/**
 * The SIGNED cell of `aetherctl list`: `-` when unsigned, the key id when
 * signed, followed by the state in parentheses only when verification
 * failed (`KEYID (bad signature)`), so that a healthy table stays quiet.
 */
export function signedCell(report: SignatureReport): string {
  if (report.keyId === undefined) return "-";
  const failed = report.state === "bad_signature" || report.state === "unknown_key";
  return failed ? `${report.keyId} (${SIGNATURE_STATE_TEXT[report.state]})` : report.keyId;
}

/** The `signatureCheck` object of `get -o json`: `keyId` and `algorithm` are null when unsigned. */
export function signatureJson(report: SignatureReport): {
  keyId: string | null;
  algorithm: string | null;
  state: SignatureState;
} {
  return { keyId: report.keyId ?? null, algorithm: report.algorithm ?? null, state: report.state };
}
