/**
 * The store layout: every key a registrar writes lies under its origin's own
 * subtree (what the per-origin etcd roles grant), and the old election name
 * is where releases before that subtree campaigned.
 */
import { describe, expect, it } from "vitest";
import {
  allOriginsKeyPrefix,
  exportElectionName,
  legacyExportElectionName,
  normalizePrefix,
  originSubtreePrefix,
  storeKeyPrefix,
} from "../../services/common/store-layout.js";
import { originKeyPrefix, projectionKey } from "../../services/registrar/store/store-key.js";

describe("store layout", () => {
  it.each([
    ["/aether/v1", "hub"],
    ["/aether/v1", "east-1"],
    ["/x", "a"],
  ])("keeps every key %s's origin %s writes under its subtree", (prefix, origin) => {
    const subtree = originSubtreePrefix(prefix, origin);
    expect(subtree).toBe(`${prefix}/clusters/${origin}/`);
    expect(subtree.startsWith(allOriginsKeyPrefix(prefix))).toBe(true);
    expect(allOriginsKeyPrefix(prefix).startsWith(storeKeyPrefix(prefix))).toBe(true);
    for (const key of [
      originKeyPrefix(prefix, origin),
      projectionKey(prefix, origin, "shop/cart"),
      `${exportElectionName(prefix, origin)}/694d`,
    ]) {
      expect(key.startsWith(subtree)).toBe(true);
    }
    expect(legacyExportElectionName(prefix, origin).startsWith(subtree)).toBe(false);
    expect(legacyExportElectionName(prefix, origin)).toBe(`${prefix}/election/${origin}/export`);
  });

  it.each([
    ["/aether/v1/", "/aether/v1"],
    ["/aether//", "/aether"],
    ["/a", "/a"],
  ])("normalizes the prefix %s to %s", (given, normalized) => {
    expect(normalizePrefix(given)).toBe(normalized);
  });

  it.each(["", "/", "aether/v1"])("refuses the prefix %j", (given) => {
    expect(() => normalizePrefix(given)).toThrow(TypeError);
  });
});
