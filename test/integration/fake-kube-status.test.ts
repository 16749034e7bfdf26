import { afterEach, describe, expect, it } from "vitest";
import type { KubeObject } from "../../services/common/kube-object.js";
import { type FakeKubeApi, startFakeKubeApi } from "../support/fake-kube-api.js";

const ROUTES = "/apis/gateway.networking.k8s.io/v1/namespaces/shop/httproutes";
const MERGE = "application/merge-patch+json";

const ROUTE: KubeObject = {
  apiVersion: "gateway.networking.k8s.io/v1",
  kind: "HTTPRoute",
  metadata: { namespace: "shop", name: "r", labels: { team: "a" } },
  spec: { parentRefs: [{ group: "", kind: "Service", name: "cart" }] },
};

const PARENTS = { parents: [{ controllerName: "x.example/c", parentRef: { name: "cart" } }] };

let fake: FakeKubeApi | undefined;
afterEach(async () => {
  await fake?.close();
  fake = undefined;
});

/** Sends `body` with `method` to `path` of the fake; resolves with the status and parsed answer. */
async function send(
  api: FakeKubeApi,
  method: string,
  path: string,
  body: unknown,
  contentType = MERGE,
): Promise<{ code: number; json: Record<string, unknown> }> {
  const response = await fetch(api.url + path, {
    method,
    headers: { "Content-Type": contentType },
    body: JSON.stringify(body),
  });
  return { code: response.status, json: (await response.json()) as Record<string, unknown> };
}

/** GETs the stored route. */
async function stored(api: FakeKubeApi): Promise<Record<string, unknown> & KubeObject> {
  return (await (await fetch(`${api.url}${ROUTES}/r`)).json()) as Record<string, unknown>;
}

describe("fake API server: the status subresource, as the real one", () => {
  it("PATCH of /status changes only .status, bumps the resourceVersion and is a MODIFIED event", async () => {
    fake = await startFakeKubeApi();
    const created = fake.create(ROUTE);
    const from = created.metadata?.resourceVersion;
    const watch = await fetch(`${fake.url}${ROUTES}?watch=true&resourceVersion=${from}`);
    const reader = (watch.body as ReadableStream<Uint8Array>).getReader();

    const answer = await send(fake, "PATCH", `${ROUTES}/r/status`, {
      metadata: { labels: { team: "b" } },
      spec: { parentRefs: [] },
      status: PARENTS,
    });
    expect(answer.code).toBe(200);
    const after = await stored(fake);
    expect(after.status).toEqual(PARENTS);
    expect(after.spec).toEqual(ROUTE.spec);
    expect(after.metadata?.labels).toEqual({ team: "a" });
    expect(after.metadata?.generation).toBe(created.metadata?.generation);
    expect(Number(after.metadata?.resourceVersion)).toBeGreaterThan(Number(from));

    const { value } = await reader.read();
    const event = JSON.parse(new TextDecoder().decode(value).split("\n")[0] as string);
    expect(event.type).toBe("MODIFIED");
    expect(event.object.status).toEqual(PARENTS);
    await reader.cancel();
    const log = fake.requests().find((r) => r.method === "PATCH");
    expect(log?.subresource).toBe("status");
  });

  it("PATCH of the object ignores .status (kept) and changes the spec (a new generation)", async () => {
    fake = await startFakeKubeApi();
    fake.create({ ...ROUTE, status: PARENTS } as KubeObject);
    const spec = { parentRefs: [{ group: "", kind: "Service", name: "orders" }] };
    const answer = await send(fake, "PATCH", `${ROUTES}/r`, { spec, status: { parents: [] } });
    expect(answer.code).toBe(200);
    const after = await stored(fake);
    expect(after.status).toEqual(PARENTS);
    expect(after.spec).toEqual(spec);
    expect(after.metadata?.generation).toBe(2);
  });

  it("a PATCH that changes nothing keeps the resourceVersion", async () => {
    fake = await startFakeKubeApi();
    const created = fake.create(ROUTE);
    const answer = await send(fake, "PATCH", `${ROUTES}/r/status`, { status: undefined });
    expect(answer.code).toBe(200);
    expect((await stored(fake)).metadata?.resourceVersion).toBe(created.metadata?.resourceVersion);
  });

  it("answers 409 for a stale resourceVersion (PUT, and PATCH with the precondition)", async () => {
    fake = await startFakeKubeApi();
    const created = fake.create(ROUTE) as Record<string, unknown> & KubeObject;
    const old = created.metadata?.resourceVersion;
    fake.update({ ...ROUTE, metadata: { ...ROUTE.metadata, labels: { team: "c" } } });
    const put = await send(fake, "PUT", `${ROUTES}/r/status`, { ...created, status: PARENTS });
    expect([put.code, put.json.reason]).toEqual([409, "Conflict"]);
    const patch = await send(fake, "PATCH", `${ROUTES}/r/status`, {
      metadata: { resourceVersion: old },
      status: PARENTS,
    });
    expect(patch.code).toBe(409);
    expect((await stored(fake)).status).toBeUndefined();

    const current = await stored(fake);
    const ok = await send(fake, "PUT", `${ROUTES}/r/status`, { ...current, status: PARENTS });
    expect(ok.code).toBe(200);
    expect((await stored(fake)).status).toEqual(PARENTS);
  });

  it("answers 404 for an absent object and for /status of a kind without it, 415 for other patch types", async () => {
    fake = await startFakeKubeApi();
    fake.create(ROUTE);
    fake.create({
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { namespace: "shop", name: "c" },
    });
    expect((await send(fake, "PATCH", `${ROUTES}/gone/status`, { status: {} })).code).toBe(404);
    const configMap = "/api/v1/namespaces/shop/configmaps/c/status";
    expect((await send(fake, "PATCH", configMap, { status: {} })).code).toBe(404);
    const strategic = "application/strategic-merge-patch+json";
    expect((await send(fake, "PATCH", `${ROUTES}/r/status`, {}, strategic)).code).toBe(415);
  });
});
