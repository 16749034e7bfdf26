import { describe, expect, it } from "vitest";
import { checkClusterName, checkServiceName } from "../../services/common/service-name.js";

describe("service names", () => {
  const ok = ["default/web", "a/b", "team-1/api-v2", `${"a".repeat(63)}/x`];
  for (const name of ok)
    it(`accepts ${name}`, () => expect(checkServiceName(name)).toBeUndefined());
  const bad: [string, RegExp][] = [
    ["web", /must be "namespace\/name"/],
    ["a/b/c", /must be "namespace\/name"/],
    ["/web", /namespace "" is not a DNS-1123 label/],
    ["ns/", /name "" is not a DNS-1123 label/],
    ["NS/web", /namespace "NS"/],
    ["ns/-web", /name "-web"/],
    ["ns/web_1", /name "web_1"/],
    [`${"a".repeat(64)}/x`, /is not a DNS-1123 label/],
  ];
  for (const [name, message] of bad) {
    it(`rejects ${JSON.stringify(name)}`, () => expect(checkServiceName(name)).toMatch(message));
  }
  it("checks cluster names", () => {
    expect(checkClusterName("hub")).toBeUndefined();
    expect(checkClusterName("Hub")).toMatch(/not a DNS-1123 label/);
    expect(checkClusterName("")).toMatch(/not a DNS-1123 label/);
  });
});
