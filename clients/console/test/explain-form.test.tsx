import { renderToString } from "preact-render-to-string";
import { describe, expect, it } from "vitest";
import { ExplainFormView } from "../src/views/explain/explain-form.js";
import { EMPTY_FORM } from "../src/views/explain/explain-model.js";

const render = (props: Partial<Parameters<typeof ExplainFormView>[0]>) =>
  renderToString(
    <ExplainFormView
      form={EMPTY_FORM}
      onChange={() => {}}
      onSubmit={() => {}}
      origins={[]}
      agents={[]}
      errorId="e"
      {...props}
    />,
  );

describe("the Explain form", () => {
  it("offers no Agent choice while the dashboard has no agents", () => {
    const html = render({});
    expect(html).not.toContain("<span>Agent</span>");
    expect(html).not.toContain('name="agent"');
  });

  it("offers the dashboard's agents, and disables the origin while one is chosen", () => {
    const none = render({ agents: ["east", "west"] });
    expect(none).toContain("<span>Agent</span>");
    expect(none).toMatch(
      /<option selected value>none: the registrar's view<\/option><option value="east">agent east<\/option><option value="west">agent west<\/option>/,
    );
    expect(none).not.toMatch(/name="origin"[^>]*disabled/);
    const west = render({ agents: ["east", "west"], form: { ...EMPTY_FORM, agent: "west" } });
    expect(west).toMatch(/<option selected value="west">agent west<\/option>/);
    expect(west).toMatch(/name="origin"[^>]*disabled/);
  });

  it("keeps an agent a linked URL names even when the dashboard does not list it", () => {
    const html = render({ agents: [], form: { ...EMPTY_FORM, agent: "north" } });
    expect(html).toMatch(/<option selected value="north">agent north<\/option>/);
  });

  it("labels every control, offers the origins and has one submit button", () => {
    const html = render({
      form: { ...EMPTY_FORM, headers: [{ name: "x-beta", value: "true" }] },
      origins: ["east", "hub"],
    });
    for (const label of [
      "Method",
      "URL",
      "Caller namespace",
      "Port",
      "gRPC method",
      "Origin cluster",
      "Seed",
    ]) {
      expect(html).toContain(`<span>${label}</span>`);
    }
    expect(html).toContain('aria-label="Header 1 name"');
    expect(html).toContain('aria-label="Remove header 1"');
    expect(html).toContain('<option value="east"></option><option value="hub"></option>');
    expect(html.match(/type="submit"/g)).toHaveLength(1);
  });

  it.each([
    ["port", 1],
    ["headers", 2],
    [undefined, 0],
  ])(
    "marks the field a problem is about (%s) invalid and points at the message",
    (invalid, count) => {
      const html = render({
        form: { ...EMPTY_FORM, headers: [{ name: "x y", value: "1" }] },
        invalid,
      });
      expect(html.match(/aria-invalid="true"/g)?.length ?? 0).toBe(count);
      expect(html.match(/aria-describedby="e"/g)?.length ?? 0).toBe(count);
    },
  );

  it("disables the method for a gRPC call (always POST)", () => {
    expect(render({ form: { ...EMPTY_FORM, grpc: "pkg.S/M" } })).toMatch(
      /name="method"[^>]*disabled/,
    );
  });
});
