/**
 * The key usage extension (RFC 5280 4.2.1.3) of a DER certificate, which
 * Node's X509Certificate does not expose: the X.509-SVID standard requires
 * a validator to refuse a leaf with `keyCertSign` or `cRLSign`. A minimal
 * DER walk, certificate → tbsCertificate → [3] extensions → the extension
 * whose OID is 2.5.29.15 → its BIT STRING. Pure over bytes.
 */

/** The key usages the SVID rules look at. */
export interface KeyUsage {
  readonly digitalSignature: boolean;
  readonly keyCertSign: boolean;
  readonly cRLSign: boolean;
}

/** One DER element: its tag and where its content starts and ends. */
interface Tlv {
  readonly tag: number;
  readonly start: number;
  readonly end: number;
}

const KEY_USAGE_OID = [0x55, 0x1d, 0x0f];

function readTlv(der: Uint8Array, offset: number, limit: number): Tlv {
  const tag = der[offset];
  const first = der[offset + 1];
  if (tag === undefined || first === undefined) throw new Error("truncated DER");
  let length = first;
  let start = offset + 2;
  if (first & 0x80) {
    const bytes = first & 0x7f;
    if (bytes === 0 || bytes > 4) throw new Error("unsupported DER length");
    length = 0;
    for (let i = 0; i < bytes; i++) length = length * 256 + (der[start + i] ?? 0);
    start += bytes;
  }
  const end = start + length;
  if (end > limit) throw new Error("DER element runs past its parent");
  return { tag, start, end };
}

/** The children of the constructed element `parent`. */
function children(der: Uint8Array, parent: Tlv): Tlv[] {
  const found: Tlv[] = [];
  for (let offset = parent.start; offset < parent.end; ) {
    const child = readTlv(der, offset, parent.end);
    found.push(child);
    offset = child.end;
  }
  return found;
}

function isKeyUsageOid(der: Uint8Array, oid: Tlv): boolean {
  return (
    oid.tag === 0x06 &&
    oid.end - oid.start === KEY_USAGE_OID.length &&
    KEY_USAGE_OID.every((byte, i) => der[oid.start + i] === byte)
  );
}

/**
 * The key usage of the DER certificate `der`, or undefined when it has no
 * key usage extension. Throws an Error on DER it cannot walk.
 */
export function certificateKeyUsage(der: Uint8Array): KeyUsage | undefined {
  const certificate = readTlv(der, 0, der.length);
  const [tbs] = children(der, certificate);
  if (tbs === undefined || tbs.tag !== 0x30) throw new Error("no tbsCertificate");
  const wrapper = children(der, tbs).find((child) => child.tag === 0xa3);
  if (wrapper === undefined) return undefined;
  const [extensions] = children(der, wrapper);
  if (extensions === undefined) return undefined;
  for (const extension of children(der, extensions)) {
    const [oid, ...rest] = children(der, extension);
    if (oid === undefined || !isKeyUsageOid(der, oid)) continue;
    const value = rest.find((part) => part.tag === 0x04);
    if (value === undefined) throw new Error("key usage without a value");
    const bits = readTlv(der, value.start, value.end);
    if (bits.tag !== 0x03) throw new Error("key usage is not a BIT STRING");
    const first = bits.end - bits.start >= 2 ? (der[bits.start + 1] as number) : 0;
    return {
      digitalSignature: (first & 0x80) !== 0,
      keyCertSign: (first & 0x04) !== 0,
      cRLSign: (first & 0x02) !== 0,
    };
  }
  return undefined;
}
