import { describe, expect, it } from "vitest";
import {
  EMPTY_FORM,
  type ExplainForm,
  formFromQuery,
  formTarget,
  formToQuery,
  randomDescription,
} from "../src/views/explain/explain-model.js";

const form = (fields: Partial<ExplainForm>): ExplainForm => ({ ...EMPTY_FORM, ...fields });

describe("the Explain form in the URL's query", () => {
  const cases: [string, ExplainForm][] = [
    ["the empty form", EMPTY_FORM],
    [
      "every field and two headers",
      form({
        method: "POST",
        url: "http://checkout.shop:8080/cart?x=1&y=2",
        headers: [
          { name: "x-beta", value: "true" },
          { name: "cookie", value: "a=b; c=d: e" },
        ],
        from: "web",
        port: "8080",
        grpc: "pkg.Svc/Method",
        origin: "east",
        seed: "42",
      }),
    ],
    ["an agent's table", form({ url: "http://checkout.shop:8080/", agent: "west" })],
  ];
  it.each(cases)("%s survives form → query → form", (_, value) => {
    const query = new Map(formToQuery(value).filter(([, v]) => v !== ""));
    expect(formFromQuery(query)).toEqual(value);
  });

  it("takes the defaults for missing keys and drops header rows without a name", () => {
    expect(formFromQuery(new Map([["url", "checkout.shop"]]))).toEqual(
      form({ url: "checkout.shop" }),
    );
    const query = formToQuery(form({ headers: [{ name: " ", value: "x" }] }));
    expect(query).toContainEqual(["headers", ""]);
  });
});

describe("the target a form asks about (aetherctl explain's parser)", () => {
  it.each([
    [
      "a GET to a service's DNS name",
      form({ url: "http://checkout.shop:8080/cart", from: "web" }),
      {
        service: "shop/checkout",
        port: 8080,
        callerNamespace: "web",
        request: { kind: "http", method: "GET", host: "checkout.shop:8080", path: "/cart" },
      },
    ],
    [
      "headers, a port override and a bare name in the caller's namespace",
      form({
        url: "cart/x",
        from: "shop",
        port: "9090",
        headers: [{ name: "X-Beta", value: "1" }],
      }),
      { service: "shop/cart", port: 9090, request: { headers: [["X-Beta", "1"]] } },
    ],
    [
      "a gRPC method: POST /pkg.Svc/Method",
      form({ url: "ledger.payments:9090", from: "web", grpc: "payments.v1.Ledger/Append" }),
      {
        service: "payments/ledger",
        request: { kind: "grpc", service: "payments.v1.Ledger", method: "Append" },
      },
    ],
    [
      "a host that only a VirtualHost can name",
      form({ url: "http://eu.cart.shop.example:8080/basket", from: "web" }),
      { service: "", virtualHostName: "eu.cart.shop.example" },
    ],
  ])("%s", (_, value, expected) => {
    const request = formTarget(value);
    expect(request.ok).toBe(true);
    if (request.ok) expect(request.target).toMatchObject(expected);
  });

  it.each([
    ["no URL", form({ url: " " }), "enter the URL", "url"],
    [
      "a caller namespace that is no name",
      form({ url: "a.b", from: "Web!" }),
      "--from-namespace",
      "from",
    ],
    [
      "a malformed header",
      form({ url: "a.b", headers: [{ name: "x y", value: "1" }] }),
      "-H",
      "headers",
    ],
    ["an IP address", form({ url: "http://10.0.0.1/" }), "IP address", "url"],
    ["a seed out of range", form({ url: "a.b", seed: "4294967296" }), "seed", "seed"],
    ["a bad port", form({ url: "a.b", port: "70000" }), "--port", "port"],
    ["a gRPC method without a slash", form({ url: "a.b", grpc: "Append" }), "--grpc", "grpc"],
    ["a method that is no token", form({ url: "a.b", method: "GE T" }), "HTTP method", "method"],
    [
      "both an origin and an agent",
      form({ url: "a.b", origin: "hub", agent: "west" }),
      "an origin cluster or an agent, not both",
      "agent",
    ],
  ])("refuses %s with the parser's reason, naming the field", (_, value, words, field) => {
    const request = formTarget(value);
    expect(request).toMatchObject({ ok: false, error: expect.stringContaining(words), field });
  });

  it("gives aetherctl's random sources: constant 0, or mulberry32 of the seed, fresh each time", () => {
    const constant = formTarget(form({ url: "a.b" }));
    const seeded = formTarget(form({ url: "a.b", seed: "7" }));
    if (!constant.ok || !seeded.ok) throw new Error("expected both to parse");
    expect(constant.random()()).toBe(0);
    const first = seeded.random();
    const again = seeded.random();
    expect([first(), first()]).toEqual([again(), again()]);
    expect(randomDescription(form({ seed: "7" }))).toBe("seeded 7");
    expect(randomDescription(EMPTY_FORM)).toBe("constant 0");
  });
});
