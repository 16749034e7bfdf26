/**
 * The head of the Service view: origin, version and its export time,
 * signature, and whether this registrar trusts the origin.
 */
import type { HeaderFacts } from "./service-facts.js";

const TRUST_WORDS = {
  trusted: "trusted by this registrar",
  untrusted: "not trusted by this registrar",
  unknown: "trust unknown",
} as const;

/** The header facts as a definition list. */
export function ServiceHeader({ facts }: { facts: HeaderFacts }) {
  return (
    <dl class="facts panel">
      <dt>Origin</dt>
      <dd>
        <span class="mono">{facts.origin}</span>{" "}
        <span class={`trust trust-${facts.trust}`}>{TRUST_WORDS[facts.trust]}</span>
      </dd>
      <dt>Version</dt>
      <dd>
        <span class="mono" data-fact="version">
          {facts.version || "(none)"}
        </span>
        {facts.exportedAt === undefined ? (
          <span class="muted"> (not an export time)</span>
        ) : (
          <span class="muted"> exported {new Date(facts.exportedAt).toISOString()}</span>
        )}
      </dd>
      <dt>Signature</dt>
      <dd>
        <span class={facts.signed ? "" : "muted"}>{facts.signature}</span>
        {facts.originSigning === "" ? null : <span class="muted"> · {facts.originSigning}</span>}
      </dd>
    </dl>
  );
}
