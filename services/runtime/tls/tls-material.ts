/**
 * The TLS material of a process (its certificate and key, and the bundle of
 * every trust domain) and how a re-read changes it. Each piece (the
 * identity; each trust domain's bundle) is decided on its own
 * (material-piece.ts): new content that parses replaces the piece; new
 * content that does not (a half-written file, a mismatched pair) keeps the
 * old piece and is reported once. Pure: the shell (tls-material-source.ts)
 * reads the files and hands in their text.
 */
import { createSecureContext, type SecureContext, type SecureContextOptions } from "node:tls";
import {
  decidePiece,
  type FileRead,
  type MaterialRejection,
  type PieceParse,
  type PieceState,
} from "./material-piece.js";
import { parseTlsIdentity, type TlsIdentity } from "./tls-identity.js";
import {
  bundleAuthoritiesPem,
  parseTrustBundle,
  type TrustBundle,
  type TrustBundles,
} from "./trust-bundle.js";

/** The files of one re-read: the identity pair (when configured) and each trust domain's bundle. */
export interface MaterialFiles {
  readonly identity?: { readonly cert: FileRead; readonly key: FileRead };
  readonly bundles: ReadonlyMap<string, FileRead>;
}

/** The material new handshakes use. */
export interface TlsMaterial {
  /** Counts changes: 1 for the first material, one more at each change. */
  readonly generation: number;
  readonly identity?: TlsIdentity;
  readonly bundles: TrustBundles;
  /** For `server.setSecureContext` and client connect options: cert chain, key, and every bundle's CAs. A function, so that logging the material never prints the key. */
  secureContextOptions(): SecureContextOptions;
  /** The same, built (`tls.createSecureContext`), for a client's `secureContext` option. */
  readonly secureContext: SecureContext;
}

/** The state carried from one re-read to the next. */
export interface MaterialState {
  readonly material?: TlsMaterial;
  readonly identity: PieceState<TlsIdentity>;
  readonly bundles: ReadonlyMap<string, PieceState<TrustBundle>>;
}

/** The state before the first read. */
export const INITIAL_MATERIAL_STATE: MaterialState = { identity: {}, bundles: new Map() };

function identityPiece(cert: FileRead, key: FileRead): () => PieceParse<TlsIdentity> {
  return () => {
    const parsed = parseTlsIdentity(cert.text ?? "", cert.path, key.text ?? "", key.path);
    return "reason" in parsed ? { refusal: parsed } : { value: parsed };
  };
}

function bundlePiece(trustDomain: string, file: FileRead): () => PieceParse<TrustBundle> {
  return () => {
    try {
      return { value: parseTrustBundle(trustDomain, file.text ?? "", file.path) };
    } catch (error) {
      return { refusal: { reason: "bundle_invalid", message: (error as Error).message } };
    }
  };
}

function buildMaterial(
  generation: number,
  identity: TlsIdentity | undefined,
  bundles: TrustBundles,
): TlsMaterial {
  const ca = bundleAuthoritiesPem(bundles);
  const cert = identity?.chain.map((certificate) => certificate.toString()).join("");
  const key = identity?.privateKey.export({ type: "pkcs8", format: "pem" }) as string | undefined;
  const options = (): SecureContextOptions => ({
    ...(identity === undefined ? {} : { cert, key }),
    ...(ca.length === 0 ? {} : { ca }),
  });
  const secureContext = createSecureContext(options());
  const material = { generation, bundles, secureContextOptions: options, secureContext };
  return identity === undefined ? material : { ...material, identity };
}

/**
 * Decides a re-read: the next state, whether the material changed (a new
 * `state.material`, whose generation is one more), and the pieces refused
 * this time. A piece refused at the first read has no material yet; the
 * shell refuses to start then. Should Node refuse to build a TLS context
 * of pieces that each parsed, the whole re-read is refused (the old
 * material stays) and retried at the next one.
 */
export function decideMaterial(
  state: MaterialState,
  files: MaterialFiles,
): { state: MaterialState; changed: boolean; rejections: MaterialRejection[] } {
  const rejections: MaterialRejection[] = [];
  const pair = files.identity;
  const identity =
    pair === undefined
      ? state.identity
      : decidePiece(
          state.identity,
          [pair.cert, pair.key],
          identityPiece(pair.cert, pair.key),
          "identity",
          rejections,
        );
  const bundles = new Map<string, PieceState<TrustBundle>>();
  for (const [trustDomain, file] of files.bundles) {
    const before = state.bundles.get(trustDomain) ?? {};
    const piece = `bundle ${trustDomain}`;
    bundles.set(
      trustDomain,
      decidePiece(before, [file], bundlePiece(trustDomain, file), piece, rejections),
    );
  }
  const changed =
    state.material === undefined ||
    identity.value !== state.identity.value ||
    [...bundles].some(([td, piece]) => piece.value !== state.bundles.get(td)?.value);
  if (!changed) return { state: { ...state, identity, bundles }, changed, rejections };
  const taken = new Map<string, TrustBundle>();
  for (const [td, piece] of bundles) if (piece.value !== undefined) taken.set(td, piece.value);
  try {
    const material = buildMaterial((state.material?.generation ?? 0) + 1, identity.value, taken);
    return { state: { material, identity, bundles }, changed: true, rejections };
  } catch (error) {
    const code = String((error as { code?: unknown }).code ?? "unknown error");
    const message = `Node refused the TLS context of the new certificate, key and bundles (${code})`;
    rejections.push({ piece: "identity", reason: "certificate_invalid", message });
    return { state, changed: false, rejections };
  }
}
