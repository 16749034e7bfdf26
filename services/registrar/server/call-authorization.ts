/**
 * Who may call on the TLS port (`--authorize`): the decision for one
 * request, from the SPIFFE ID the handshake's guard accepted. Every request
 * of the port is decided (ConfigService, health, reflection and the plain
 * routes alike) before its body is read. Pure; the reasons are the labels
 * of `aether_config_denied_calls_total`.
 */
import { Code } from "@connectrpc/connect";
import { type AuthorizePattern, isAuthorized } from "../../common/spiffe-authorize.js";
import type { SpiffeId } from "../../common/spiffe-id.js";

/** Why a call was denied. */
export const DENIED_CALL_REASONS = [
  /** The caller's ID matches no `--authorize` pattern: PermissionDenied. */
  "not_authorized",
  /** A port that requires client certificates has no verified ID for the call: Unauthenticated. */
  "no_peer_identity",
] as const;

/** One of {@link DENIED_CALL_REASONS}. */
export type DeniedCallReason = (typeof DENIED_CALL_REASONS)[number];

/** The rules of the port. */
export interface CallRules {
  /** Whether clients must present an X.509-SVID (`--trust-domain-bundle` given). */
  readonly mutual: boolean;
  /** `--authorize`; empty: every verified ID. */
  readonly authorize: readonly AuthorizePattern[];
}

/** The decision on one call. */
export type CallDecision =
  | { readonly allowed: true }
  | {
      readonly allowed: false;
      readonly reason: DeniedCallReason;
      /** The status the caller gets. */
      readonly code: Code;
      /** The error message the caller gets: names its ID and the path. */
      readonly message: string;
    };

/**
 * Decides a call to `path` by the client `peer` (undefined: no verified ID
 * on its connection). Without mutual TLS every call is allowed (there is no
 * identity to judge).
 */
export function decideCall(
  peer: SpiffeId | undefined,
  rules: CallRules,
  path: string,
): CallDecision {
  if (!rules.mutual) return { allowed: true };
  if (peer === undefined) {
    return {
      allowed: false,
      reason: "no_peer_identity",
      code: Code.Unauthenticated,
      message: `no verified X.509-SVID on this connection to call ${path}`,
    };
  }
  if (isAuthorized(peer, rules.authorize)) return { allowed: true };
  return {
    allowed: false,
    reason: "not_authorized",
    code: Code.PermissionDenied,
    message: `${peer.text} is not authorized to call ${path} on this registrar (--authorize)`,
  };
}
