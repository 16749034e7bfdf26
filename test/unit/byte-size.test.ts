import { describe, expect, it } from "vitest";
import { parseByteSize } from "../../services/common/byte-size.js";

describe("parseByteSize", () => {
  const ok: [string, number][] = [
    ["0", 0],
    ["65536", 65_536],
    ["512B", 512],
    ["16KiB", 16_384],
    ["4MiB", 4_194_304],
    ["2GiB", 2_147_483_648],
  ];
  for (const [text, bytes] of ok)
    it(`parses ${text}`, () => expect(parseByteSize(text)).toBe(bytes));
  for (const text of ["", "4M", "4 MiB", "1.5MiB", "-1", "MiB", "4mib", "99999999999999999GiB"]) {
    it(`rejects ${JSON.stringify(text)}`, () =>
      expect(() => parseByteSize(text)).toThrow(/is not a byte size/));
  }
});
