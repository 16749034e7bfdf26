import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { type AddressInfo, createServer, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { toBinary } from "@bufbuild/protobuf";
import { KubeConfig } from "@kubernetes/client-node";
import { afterEach, describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { ServiceConfigProjectionSchema } from "../../gen/aether/registry/v1/projection_pb.js";
import type { KubeObject } from "../../services/common/kube-object.js";
import { projectServices } from "../../services/common/projector.js";
import { createDirSource } from "../../services/sources/dir-source.js";
import { normalizeObject, sortObjects } from "../../services/sources/kube-snapshot.js";
import {
  createKubernetesSource,
  type KubernetesSourceOptions,
} from "../../services/sources/kubernetes-source.js";
import type { ObjectSource } from "../../services/sources/object-source.js";
import {
  type FakeKubeApi,
  type FakeKubeApiOptions,
  type FakeResource,
  startFakeKubeApi,
} from "../support/fake-kube-api.js";
import { waitFor } from "../support/wait.js";

const GATEWAY = "gateway.networking.k8s.io/v1";
const RESOURCES: FakeResource[] = [
  "namespaces",
  "services",
  "configmaps",
  "httproutes",
  "grpcroutes",
  "referencegrants",
  "backendtlspolicies",
  "serviceexports",
  "httpfilters",
  "virtualhosts",
  "meshconfigs",
];

const serviceParent = (name: string, namespace?: string) => ({
  group: "",
  kind: "Service",
  name,
  ...(namespace === undefined ? {} : { namespace }),
  port: 8080,
});

/** One object of every kind the source watches, across two namespaces. */
const OBJECTS: KubeObject[] = [
  { apiVersion: "v1", kind: "Namespace", metadata: { name: "shop" } },
  { apiVersion: "v1", kind: "Namespace", metadata: { name: "web", labels: { team: "web" } } },
  {
    apiVersion: "v1",
    kind: "Service",
    metadata: { namespace: "shop", name: "cart" },
    spec: { ports: [{ name: "http", port: 8080, protocol: "TCP" }] },
  },
  {
    apiVersion: "v1",
    kind: "Service",
    metadata: { namespace: "shop", name: "cart-v2" },
    spec: { ports: [{ name: "http", port: 8080, protocol: "TCP" }] },
  },
  {
    apiVersion: "multicluster.x-k8s.io/v1alpha1",
    kind: "ServiceExport",
    metadata: { namespace: "shop", name: "cart" },
  },
  {
    apiVersion: GATEWAY,
    kind: "HTTPRoute",
    metadata: { namespace: "shop", name: "cart-split" },
    spec: {
      parentRefs: [serviceParent("cart")],
      rules: [
        {
          matches: [{ path: { type: "PathPrefix", value: "/" } }],
          backendRefs: [
            { name: "cart", port: 8080, weight: 90 },
            { name: "cart-v2", port: 8080, weight: 10 },
          ],
        },
      ],
    },
  },
  {
    apiVersion: GATEWAY,
    kind: "HTTPRoute",
    metadata: { namespace: "web", name: "cart-from-web" },
    spec: {
      parentRefs: [serviceParent("cart", "shop")],
      rules: [
        {
          filters: [
            {
              type: "RequestHeaderModifier",
              requestHeaderModifier: { add: [{ name: "x-caller", value: "web" }] },
            },
          ],
          backendRefs: [{ namespace: "shop", name: "cart", port: 8080 }],
        },
      ],
    },
  },
  {
    apiVersion: GATEWAY,
    kind: "GRPCRoute",
    metadata: { namespace: "shop", name: "cart-grpc" },
    spec: {
      parentRefs: [serviceParent("cart")],
      rules: [
        {
          matches: [{ method: { service: "shop.Cart", method: "Get" } }],
          backendRefs: [{ name: "cart", port: 8080 }],
        },
      ],
    },
  },
  {
    apiVersion: "gateway.networking.k8s.io/v1beta1",
    kind: "ReferenceGrant",
    metadata: { namespace: "shop", name: "allow-web" },
    spec: {
      from: [{ group: "gateway.networking.k8s.io", kind: "HTTPRoute", namespace: "web" }],
      to: [{ group: "", kind: "Service" }],
    },
  },
  {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { namespace: "shop", name: "cart-ca" },
    data: { "ca.crt": "-----BEGIN CERTIFICATE-----\n" },
  } as KubeObject,
  {
    apiVersion: GATEWAY,
    kind: "BackendTLSPolicy",
    metadata: { namespace: "shop", name: "cart-tls" },
    spec: {
      targetRefs: [{ group: "", kind: "Service", name: "cart" }],
      validation: {
        caCertificateRefs: [{ group: "", kind: "ConfigMap", name: "cart-ca" }],
        hostname: "cart.shop",
      },
    },
  },
  {
    apiVersion: "mesh.aether.dev/v1alpha1",
    kind: "HTTPFilter",
    metadata: { namespace: "shop", name: "cart-headers" },
    spec: {
      targetRefs: [{ group: "", kind: "Service", name: "cart" }],
      headerMutation: { response: { set: [{ name: "x-served-by", value: "cart" }] } },
    },
  },
  {
    apiVersion: "mesh.aether.dev/v1alpha1",
    kind: "VirtualHost",
    metadata: { namespace: "shop", name: "cart-names" },
    spec: {
      targetRef: { group: "", kind: "Service", name: "cart" },
      hostnames: ["cart.example.com"],
    },
  },
  {
    apiVersion: "mesh.aether.dev/v1alpha1",
    kind: "MeshConfig",
    metadata: { name: "default" },
    spec: { requestTimeout: "15s", retryBudget: { percent: 20 } },
  },
];

const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/;

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function fakeWith(objects: KubeObject[], options: FakeKubeApiOptions = {}) {
  const fake = await startFakeKubeApi(options);
  cleanups.push(() => fake.close());
  for (const object of objects) fake.create(object);
  return fake;
}

function kubeSource(fake: FakeKubeApi, options: KubernetesSourceOptions = {}): ObjectSource {
  const source = createKubernetesSource({
    kubeConfig: fake.kubeConfig(),
    debounceMs: 20,
    initialRetryDelayMs: 20,
    maxRetryDelayMs: 200,
    missingRetryMs: 100,
    ...options,
  });
  cleanups.push(() => source.stop());
  return source;
}

async function synced(source: ObjectSource): Promise<ObjectSource> {
  source.start();
  await source.whenSynced();
  return source;
}

/** The snapshot without server-set fields, in kind order: what the comparisons use. */
function normalized(source: ObjectSource): KubeObject[] {
  return sortObjects(source.snapshot().map((o) => normalizeObject(o)));
}

function find(source: ObjectSource, kind: string, name: string): KubeObject | undefined {
  return source.snapshot().find((o) => o.kind === kind && o.metadata?.name === name);
}

function lists(fake: FakeKubeApi, resource: FakeResource): number {
  return fake.requests().filter((r) => r.resource === resource && !r.watch).length;
}

function countChanges(source: ObjectSource): { count: number } {
  const counter = { count: 0 };
  source.onChange(() => counter.count++);
  return counter;
}

const newService = (name: string): KubeObject => ({
  apiVersion: "v1",
  kind: "Service",
  metadata: { namespace: "shop", name },
  spec: { ports: [{ port: 80 }] },
});

describe("kubernetes source against the fake API server", () => {
  it("lists every kind, then watches each from the list's resourceVersion with bookmarks", async () => {
    const fake = await fakeWith(OBJECTS);
    const source = await synced(kubeSource(fake));

    expect(source.synced).toBe(true);
    expect(source.problems()).toEqual([]);
    expect(normalized(source)).toEqual(sortObjects(OBJECTS));
    expect(source.snapshot()).toEqual(sortObjects(source.snapshot()));
    for (const object of source.snapshot()) {
      expect(object.metadata?.creationTimestamp).toMatch(RFC3339);
      expect(object.metadata?.resourceVersion).toMatch(/^\d+$/);
    }
    await waitFor(() => fake.openWatches() === RESOURCES.length, 5_000, "a watch per kind");
    for (const resource of RESOURCES) {
      const requests = fake.requests().filter((r) => r.resource === resource);
      expect(requests.map((r) => r.watch)).toEqual([false, true]);
      const watch = new URL(requests[1]?.url ?? "", fake.url).searchParams;
      expect(watch.get("allowWatchBookmarks")).toBe("true");
      expect(watch.get("resourceVersion")).toBe(String(fake.resourceVersion));
    }
    // The API server leaves TypeMeta out of built-in list items; the source puts it back.
    const raw = (await (await fetch(`${fake.url}/api/v1/services`)).json()) as {
      items: KubeObject[];
    };
    expect(raw.items[0]?.kind).toBeUndefined();
    expect(find(source, "Service", "cart")?.apiVersion).toBe("v1");
  });

  it("follows additions, updates and deletions, debounced", async () => {
    const fake = await fakeWith(OBJECTS);
    const source = await synced(kubeSource(fake));
    const changes = countChanges(source);

    fake.create(newService("added"));
    await waitFor(() => find(source, "Service", "added") !== undefined, 5_000, "the addition");
    const route = structuredClone(OBJECTS[5]) as KubeObject & { spec: { rules: unknown[] } };
    route.spec.rules = [{ backendRefs: [{ name: "cart-v2", port: 8080 }] }];
    fake.update(route);
    await waitFor(
      () =>
        JSON.stringify(find(source, "HTTPRoute", "cart-split")?.spec) ===
        JSON.stringify(route.spec),
      5_000,
      "the update",
    );
    expect(find(source, "HTTPRoute", "cart-split")?.metadata?.generation).toBe(2);
    fake.delete(newService("added"));
    await waitFor(() => find(source, "Service", "added") === undefined, 5_000, "the deletion");
    await waitFor(() => changes.count === 3, 5_000, "a notification per change");

    for (let i = 0; i < 10; i++) fake.create(newService(`burst-${i}`));
    await waitFor(() => source.snapshot().length === OBJECTS.length + 10, 5_000, "the burst");
    await waitFor(() => changes.count > 3, 5_000, "the burst's notification");
    expect(changes.count).toBeLessThan(3 + 10);
  });

  it("re-lists after a watch gets 410 Expired, and the snapshot matches the server", async () => {
    const fake = await fakeWith(OBJECTS);
    const source = await synced(kubeSource(fake));
    await waitFor(() => fake.openWatches() === RESOURCES.length, 5_000, "a watch per kind");
    for (const resource of RESOURCES) expect(lists(fake, resource)).toBe(1);
    const seen = fake.requests().length;

    fake.expireHistory();
    const compacted = fake.resourceVersion;
    fake.endWatches();
    // Changes while no watch is open: only the re-list can bring them.
    fake.delete(OBJECTS[3] as KubeObject);
    fake.create(newService("after-expiry"));
    fake.create({ apiVersion: "v1", kind: "Namespace", metadata: { name: "late" } });

    await waitFor(
      () => RESOURCES.every((resource) => lists(fake, resource) === 2),
      5_000,
      "a second list of every resource",
    );
    const expected = sortObjects([
      ...OBJECTS.filter((o) => o !== OBJECTS[3]),
      newService("after-expiry"),
      { apiVersion: "v1", kind: "Namespace", metadata: { name: "late" } },
    ]);
    await waitFor(
      () => JSON.stringify(normalized(source)) === JSON.stringify(expected),
      5_000,
      "the re-listed snapshot",
    );
    const expiredWatches = fake
      .requests()
      .slice(seen)
      .filter((r) => r.watch && Number(r.resourceVersion) < compacted);
    expect(new Set(expiredWatches.map((r) => r.resource))).toEqual(new Set(RESOURCES));
    await waitFor(() => fake.openWatches() === RESOURCES.length, 5_000, "watches open again");
    expect(source.problems()).toEqual([]);
  });

  it("reconnects after dropped connections and resumes from its resourceVersion", async () => {
    const fake = await fakeWith(OBJECTS);
    const source = await synced(kubeSource(fake));
    await waitFor(() => fake.openWatches() === RESOURCES.length, 5_000, "a watch per kind");
    const seen = fake.requests().length;

    fake.dropConnections();
    fake.create(newService("while-dropped"));
    await waitFor(() => find(source, "Service", "while-dropped") !== undefined, 5_000, "catch-up");
    await waitFor(() => fake.openWatches() === RESOURCES.length, 5_000, "a watch per kind again");
    fake.create(newService("after-reconnect"));
    await waitFor(() => find(source, "Service", "after-reconnect") !== undefined, 5_000, "live");

    const after = fake.requests().slice(seen);
    expect(after.filter((r) => !r.watch)).toEqual([]); // resumed, not re-listed
    expect(new Set(after.map((r) => r.resource))).toEqual(new Set(RESOURCES));
    for (const request of after) expect(Number(request.resourceVersion)).toBeGreaterThan(100);
    expect(source.problems()).toEqual([]);
  });

  it("moves its resourceVersion on with bookmarks, so a compaction needs no re-list", async () => {
    const fake = await fakeWith(OBJECTS, { bookmarkIntervalMs: 30 });
    await synced(kubeSource(fake));
    await waitFor(() => fake.openWatches() === RESOURCES.length, 5_000, "a watch per kind");

    fake.expireHistory();
    const compacted = fake.resourceVersion;
    await waitFor(
      () => {
        const marked = fake.bookmarks().filter((b) => b.resourceVersion === compacted);
        return new Set(marked.map((b) => b.resource)).size === RESOURCES.length;
      },
      5_000,
      "a bookmark at the new resourceVersion on every watch",
    );
    // The fake and the client share this process's event loop: by the time
    // more bookmarks have been written, the loop has been through the poll
    // phases in which the client read the earlier ones.
    const sent = fake.bookmarks().length;
    await waitFor(() => fake.bookmarks().length >= sent + 6, 5_000, "more bookmarks");
    const seen = fake.requests().length;
    fake.endWatches();
    await waitFor(() => fake.openWatches() === RESOURCES.length, 5_000, "a watch per kind again");

    const after = fake.requests().slice(seen);
    expect(after.every((r) => r.watch && r.resourceVersion === String(compacted))).toBe(true);
    for (const resource of RESOURCES) expect(lists(fake, resource)).toBe(1);
  });

  it("treats a resource the server does not serve as empty, reports it, and picks it up later", async () => {
    const fake = await fakeWith(OBJECTS);
    fake.setMissing("serviceexports");
    const source = await synced(kubeSource(fake));

    expect(source.problems()).toHaveLength(1);
    expect(source.problems()[0]?.where).toBe(
      "kubernetes:/apis/multicluster.x-k8s.io/v1alpha1/serviceexports",
    );
    expect(source.problems()[0]?.message).toMatch(/CustomResourceDefinition/);
    expect(normalized(source)).toEqual(
      sortObjects(OBJECTS.filter((o) => o.kind !== "ServiceExport")),
    );
    fake.create(newService("still-followed"));
    await waitFor(() => find(source, "Service", "still-followed") !== undefined, 5_000, "others");

    fake.setMissing("serviceexports", false);
    await waitFor(() => find(source, "ServiceExport", "cart") !== undefined, 5_000, "the CRD");
    expect(source.problems()).toEqual([]);

    // The CRD goes away while watched: the next watch gets 404 and the kind empties.
    fake.setMissing("serviceexports");
    fake.endWatches();
    await waitFor(() => find(source, "ServiceExport", "cart") === undefined, 5_000, "emptied");
    expect(source.problems().map((p) => p.where)).toEqual([
      "kubernetes:/apis/multicluster.x-k8s.io/v1alpha1/serviceexports",
    ]);
  });

  it("gives the same normalised snapshot as a directory holding the same objects", async () => {
    const directory = await mkdtemp(join(tmpdir(), "kube-vs-dir-"));
    cleanups.push(() => rm(directory, { recursive: true, force: true }));
    const documents = (objects: KubeObject[]) => objects.map((o) => stringify(o)).join("---\n");
    await mkdir(join(directory, "shop"));
    await writeFile(
      join(directory, "namespaces.json"),
      JSON.stringify({
        apiVersion: "v1",
        kind: "List",
        items: OBJECTS.filter((o) => o.kind === "Namespace"),
      }),
    );
    await writeFile(
      join(directory, "shop", "services.yaml"),
      documents(
        OBJECTS.filter((o) => ["Service", "ServiceExport", "ConfigMap"].includes(o.kind ?? "")),
      ),
    );
    const routes = OBJECTS.filter(
      (o) =>
        o.apiVersion?.startsWith("gateway.networking.k8s.io") ||
        o.apiVersion?.startsWith("mesh.aether.dev"),
    );
    await writeFile(join(directory, "routes.yaml"), documents(routes));

    const fake = await fakeWith(OBJECTS);
    const kube = await synced(kubeSource(fake));
    const dir = createDirSource({ path: directory, debounceMs: 20 });
    cleanups.push(() => dir.stop());
    await synced(dir);

    expect(normalized(kube)).toEqual(normalized(dir));
    expect(JSON.stringify(normalized(kube))).toBe(JSON.stringify(normalized(dir)));
    // creationTimestamp: set by the API server, absent from manifests.
    expect(kube.snapshot().every((o) => RFC3339.test(o.metadata?.creationTimestamp ?? ""))).toBe(
      true,
    );
    expect(dir.snapshot().some((o) => o.metadata?.creationTimestamp !== undefined)).toBe(false);

    // The same edit on both sides keeps them equal.
    const edited = structuredClone(routes[0]) as KubeObject & { spec: { rules: unknown[] } };
    edited.spec.rules = [{ backendRefs: [{ name: "cart", port: 8080 }] }];
    fake.update(edited);
    await writeFile(join(directory, "routes.yaml"), documents([edited, ...routes.slice(1)]));
    const same = () => JSON.stringify(normalized(kube)) === JSON.stringify(normalized(dir));
    await waitFor(
      () =>
        same() &&
        JSON.stringify(find(dir, "HTTPRoute", "cart-split")?.spec) === JSON.stringify(edited.spec),
      5_000,
      "both sources to show the edit",
    );
  });

  it("exports byte-identical projections to a directory holding the objects as the API serves them", async () => {
    const fake = await fakeWith(OBJECTS);
    const kube = await synced(kubeSource(fake));
    const directory = await mkdtemp(join(tmpdir(), "kube-export-vs-dir-"));
    cleanups.push(() => rm(directory, { recursive: true, force: true }));
    // What `kubectl get -o yaml` would save: the objects with their server-set metadata.
    await writeFile(
      join(directory, "dump.yaml"),
      kube
        .snapshot()
        .map((o) => stringify(o))
        .join("---\n"),
    );
    const dir = createDirSource({ path: directory, debounceMs: 20 });
    cleanups.push(() => dir.stop());
    await synced(dir);
    const fromKube = projectServices(kube.snapshot());
    const fromDir = projectServices(dir.snapshot());
    expect(fromKube.projections.length).toBeGreaterThan(0);
    expect(fromKube.rejections).toEqual(fromDir.rejections);
    expect(fromKube.projections.map((p) => toBinary(ServiceConfigProjectionSchema, p))).toEqual(
      fromDir.projections.map((p) => toBinary(ServiceConfigProjectionSchema, p)),
    );
    expect(fromKube.projections.map((p) => p.service)).toContain("@mesh");
    // The API server's creation times travel into the projection (precedence ties).
    const cart = fromKube.projections.find((p) => p.service === "shop/cart");
    expect(cart?.routes[0]?.creationTime).toBeDefined();
  });

  it("reads a kubeconfig file and watches one namespace", async () => {
    const fake = await fakeWith(OBJECTS);
    const directory = await mkdtemp(join(tmpdir(), "kubeconfig-"));
    cleanups.push(() => rm(directory, { recursive: true, force: true }));
    const path = join(directory, "config");
    await writeFile(path, fake.kubeConfig().exportConfig());

    const source = await synced(
      kubeSource(fake, { kubeConfig: undefined, kubeconfig: path, namespace: "shop" }),
    );
    expect(source.name).toBe("kubernetes namespace=shop");
    // The mesh-wide MeshConfig is cluster-scoped: watched whole, whatever the namespace.
    const inShop = OBJECTS.filter(
      (o) =>
        o.metadata?.namespace === "shop" || o.metadata?.name === "shop" || o.kind === "MeshConfig",
    );
    expect(normalized(source)).toEqual(sortObjects(inShop));
    const urls = fake.requests().map((r) => r.url);
    expect(urls).toContain("/api/v1/namespaces/shop/services");
    expect(urls).toContain("/api/v1/namespaces?fieldSelector=metadata.name%3Dshop");
    expect(urls).toContain("/apis/mesh.aether.dev/v1alpha1/meshconfigs");

    fake.create({ ...newService("elsewhere"), metadata: { namespace: "web", name: "elsewhere" } });
    fake.create(newService("here"));
    await waitFor(() => find(source, "Service", "here") !== undefined, 5_000, "the shop service");
    expect(find(source, "Service", "elsewhere")).toBeUndefined();
  });

  it("fails whenSynced with the path of a kubeconfig that cannot be read", async () => {
    const source = createKubernetesSource({ kubeconfig: "/nonexistent/aether/kubeconfig" });
    cleanups.push(() => source.stop());
    source.start();
    await expect(source.whenSynced()).rejects.toThrow(/\/nonexistent\/aether\/kubeconfig/);
    expect(source.problems()[0]?.message).toMatch(/\/nonexistent\/aether\/kubeconfig/);
  });

  it("reports a server that drops every connection, and rejects whenSynced when stopped first", async () => {
    // A listener that resets each connection (its port stays taken, unlike a closed one's).
    const sockets = new Set<Socket>();
    const server = createServer((socket) => {
      sockets.add(socket);
      socket.resetAndDestroy();
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    cleanups.push(async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    });
    const config = new KubeConfig();
    const { port } = server.address() as AddressInfo;
    config.loadFromClusterAndUser(
      { name: "reset", server: `http://127.0.0.1:${port}`, skipTLSVerify: true },
      { name: "reset" },
    );
    const source = createKubernetesSource({ kubeConfig: config, initialRetryDelayMs: 20 });
    cleanups.push(() => source.stop());
    source.start();
    await waitFor(() => source.problems().length === RESOURCES.length, 5_000, "a problem per kind");
    expect(source.problems()[0]?.message).toMatch(
      /^listing or watching failed: .*(ECONNRESET|socket hang up)/,
    );
    expect(source.synced).toBe(false);
    await source.stop();
    await expect(source.whenSynced()).rejects.toThrow(/stopped/);
    expect(() => source.start()).toThrow(/stopped/);
  });
});
