/**
 * The Service view's panels rendered to HTML: the header facts (trust and
 * signature in words), the rejections table (or the sentence that nobody
 * refuses the service, and what has not answered), the history with the
 * current version marked.
 */
import { render } from "preact-render-to-string";
import { describe, expect, it } from "vitest";
import { ServiceHeader } from "../src/views/service/service-header.js";
import { ServiceHistory } from "../src/views/service/service-history-table.js";
import { ServiceProblems } from "../src/views/service/service-problems.js";

describe("the Service view's panels", () => {
  it.each([
    { trust: "trusted", word: "trusted by this registrar" },
    { trust: "untrusted", word: "not trusted by this registrar" },
    { trust: "unknown", word: "trust unknown" },
  ] as const)("says the origin is $trust", ({ trust, word }) => {
    const html = render(
      <ServiceHeader
        facts={{
          origin: "hub",
          version: "2026-11-01T00:00:00Z",
          exportedAt: Date.parse("2026-11-01T00:00:00Z"),
          signature: "signed by key k1 (ed25519)",
          signed: true,
          trust,
          originSigning: "",
        }}
      />,
    );
    expect(html).toContain(`>${word}<`);
    expect(html).toContain("signed by key k1 (ed25519)");
    expect(html).toContain("exported 2026-11-01T00:00:00.000Z");
  });

  it("lists rejections, or says there are none and what is still pending", () => {
    const row = {
      where: "3 agents in west",
      origin: "hub",
      version: "v2",
      reason: "bad_signature",
      message: "bad",
    };
    const listed = render(<ServiceProblems rows={[row]} pending="" />);
    expect(listed).toContain("<td>3 agents in west</td>");
    expect(listed).toContain("bad_signature");
    const none = render(
      <ServiceProblems rows={[]} pending="GetFleetStatus failed: unimplemented" />,
    );
    expect(none).toContain("No registrar or agent refuses");
    expect(none).toContain("GetFleetStatus failed: unimplemented");
  });

  it("marks the current version in the history, and says when there is none", () => {
    const html = render(
      <ServiceHistory
        rows={[
          { version: "v2", origin: "hub", receivedAt: 2000, current: true },
          { version: "v1", origin: "hub", receivedAt: 1000, current: false },
        ]}
      />,
    );
    expect(html.match(/aria-current="true"/g)?.length).toBe(1);
    expect(html.indexOf("v2")).toBeLessThan(html.indexOf("v1"));
    expect(render(<ServiceHistory rows={[]} />)).toContain("None yet");
  });
});
