/** The pure SHA-256 agrees with Node's crypto on the standard vectors and on random input of every padding length. */
import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { mulberry32 } from "../../services/common/mulberry32.js";
import { sha256Hex } from "../../services/common/sha256.js";

const utf8 = (text: string) => new TextEncoder().encode(text);

describe("sha256", () => {
  it.each([
    ["", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"],
    ["abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"],
    [
      "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
      "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1",
    ],
  ])("digests %j as the FIPS 180-4 example says", (text, digest) => {
    expect(sha256Hex(utf8(text))).toBe(digest);
  });

  it("agrees with node:crypto for every length from 0 to 300 bytes and for 1 MiB", () => {
    const random = mulberry32(7);
    const lengths = [...Array.from({ length: 301 }, (_, i) => i), 1 << 20];
    for (const length of lengths) {
      const data = Uint8Array.from({ length }, () => Math.floor(random() * 256));
      const expected = createHash("sha256").update(data).digest("hex");
      expect(sha256Hex(data), `length ${length}`).toBe(expected);
    }
  });
});
