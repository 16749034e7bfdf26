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
      errorId="e"
      {...props}
    />,
  );

describe("the Explain form", () => {
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
