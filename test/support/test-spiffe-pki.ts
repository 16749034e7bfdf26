/**
 * The SPIFFE PKI the mutual-TLS tests share, made with `openssl` in a temp
 * directory: a CA per trust domain (`hub.mesh`, `east.mesh`, and a second
 * `east.mesh` CA that no bundle trusts), PEM and JWKS bundles, a registrar
 * (server) and an agent (client) SVID, and one certificate per way a peer
 * can be refused.
 */
import { copyFile } from "node:fs/promises";
import { join } from "node:path";
import {
  createSpiffeCa,
  issueSvid,
  type SpiffeCa,
  type TestSvid,
  writeJwksBundle,
} from "./spiffe-ca.js";

/** The registrar's SPIFFE ID in the tests. */
export const REGISTRAR_ID = "spiffe://hub.mesh/ns/aether-system/sa/aether-registrar";
/** The agent's SPIFFE ID in the tests. */
export const AGENT_ID = "spiffe://east.mesh/ns/aether-system/sa/aether-agent";

const DAY = 86_400_000;

/** See {@link createSpiffePki}. */
export interface SpiffePki {
  readonly dir: string;
  readonly hubCa: SpiffeCa;
  /** `east.mesh`'s CA: a root and an intermediate under it (leaves are issued by the intermediate). */
  readonly eastRoot: SpiffeCa;
  readonly eastCa: SpiffeCa;
  /** A CA for `east.mesh` that no bundle holds. */
  readonly rogueCa: SpiffeCa;
  /** Bundle files: `hub.mesh` as JWKS, `east.mesh` as PEM (its root). */
  readonly bundles: { readonly hubJwks: string; readonly hubPem: string; readonly eastPem: string };
  /** {@link REGISTRAR_ID} from hub's CA, also for `localhost` and `127.0.0.1`. */
  readonly server: TestSvid;
  /** {@link AGENT_ID} from east's intermediate (the file holds leaf and intermediate). */
  readonly client: TestSvid;
  /** {@link AGENT_ID}, valid for one day in 2020. */
  readonly expired: TestSvid;
  /** {@link AGENT_ID}, valid from tomorrow. */
  readonly notYetValid: TestSvid;
  /** {@link AGENT_ID} and a second SPIFFE ID. */
  readonly twoUris: TestSvid;
  /** east's CA signing a `hub.mesh` ID: refused though east's CA is trusted for east. */
  readonly forgery: TestSvid;
  /** {@link AGENT_ID} from {@link SpiffePki.rogueCa}. */
  readonly unknownCa: TestSvid;
  /** A certificate with a DNS name and no URI SAN. */
  readonly noSpiffeId: TestSvid;
  /** A certificate with {@link AGENT_ID} and basicConstraints CA:TRUE. */
  readonly leafCa: TestSvid;
}

/** Makes the shared PKI under `dir` (about twenty openssl runs). */
export async function createSpiffePki(dir: string): Promise<SpiffePki> {
  const [hubCa, eastRoot, rogueCa] = await Promise.all([
    createSpiffeCa(dir, "hub-ca", "hub.mesh"),
    createSpiffeCa(dir, "east-root", "east.mesh"),
    createSpiffeCa(dir, "rogue-ca", "east.mesh"),
  ]);
  const eastCa = await createSpiffeCa(dir, "east-ca", "east.mesh", { parent: eastRoot });
  const bundles = {
    hubJwks: join(dir, "hub.mesh.jwks.json"),
    hubPem: hubCa.cert,
    eastPem: join(dir, "east.mesh.pem"),
  };
  await writeJwksBundle(bundles.hubJwks, [hubCa]);
  await copyFile(eastRoot.cert, bundles.eastPem);
  const server = await issueSvid(hubCa, dir, "server", {
    uris: [REGISTRAR_ID],
    otherSans: ["DNS:localhost", "IP:127.0.0.1"],
  });
  const east = (name: string, options: Parameters<typeof issueSvid>[3]) =>
    issueSvid(eastCa, dir, name, options);
  const client = await east("client", { uris: [AGENT_ID] });
  const expired = await east("expired", {
    uris: [AGENT_ID],
    notBefore: new Date("2020-01-01T00:00:00Z"),
    notAfter: new Date("2020-01-02T00:00:00Z"),
  });
  const notYetValid = await east("not-yet-valid", {
    uris: [AGENT_ID],
    notBefore: new Date(Date.now() + DAY),
    notAfter: new Date(Date.now() + 2 * DAY),
  });
  const twoUris = await east("two-uris", { uris: [AGENT_ID, "spiffe://east.mesh/ns/other/sa/x"] });
  const forgery = await east("forgery", {
    uris: ["spiffe://hub.mesh/ns/aether-system/sa/aether-agent"],
  });
  const noSpiffeId = await east("no-spiffe-id", { uris: [], otherSans: ["DNS:agent.east"] });
  const leafCa = await east("leaf-ca", { uris: [AGENT_ID], ca: true });
  const unknownCa = await issueSvid(rogueCa, dir, "unknown-ca", { uris: [AGENT_ID] });
  return {
    ...{ dir, hubCa, eastRoot, eastCa, rogueCa, bundles, server, client, expired, notYetValid },
    ...{ twoUris, forgery, unknownCa, noSpiffeId, leafCa },
  };
}
