/**
 * Status written back, with real processes: a registrar process with
 * `--export-source kubernetes` (a kubeconfig pointing at the fake API
 * server), over a real etcd, as the export leader, writes the GAMMA status of
 * the routes it projects and the GEP-713 status of an attached policy
 * through the status subresource, and only that: an accepted route, a route
 * whose backend does not exist (ResolvedRefs False BackendNotFound), an
 * invalid HTTPFilter (Accepted False Invalid); another controller's entry is
 * kept; no spec or metadata is ever written; an accepted parent carries
 * the fleet condition (the hub's own published import status: Pending until
 * it is read, then InSync, and Propagating then InSync again after an edit);
 * and an export run that changes no status writes nothing (the PATCHes are
 * counted).
 */
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FLEET_CONDITION_TYPE } from "../../services/common/fleet-condition.js";
import type { KubeObject } from "../../services/common/kube-object.js";
import { STATUS_CONTROLLER_NAME } from "../../services/common/status-reasons.js";
import { useSharedEtcd } from "../support/etcd-suite.js";
import { type FakeKubeApi, startFakeKubeApi } from "../support/fake-kube-api.js";
import { kubeService, serviceExport } from "../support/kube-objects.js";
import {
  type RegistrarProcess,
  startRegistrarProcess,
  stopAllRegistrars,
} from "../support/registrar-process.js";
import { waitFor } from "../support/wait.js";

const shared = useSharedEtcd("status");
const NS = "shop";
const TIMEOUT_MS = 20_000;
const GATEWAY = "gateway.networking.k8s.io/v1";

const parent = (name: string) => ({ group: "", kind: "Service", name });
const theirs = {
  parentRef: { group: "gateway.networking.k8s.io", kind: "Gateway", name: "edge", namespace: NS },
  controllerName: "example.com/gateway",
  conditions: [
    {
      type: "Accepted",
      status: "True",
      reason: "Accepted",
      message: "theirs",
      lastTransitionTime: "2026-01-01T00:00:00Z",
    },
  ],
};

const route = (name: string, service: string, backend: string, status?: object): KubeObject =>
  ({
    apiVersion: GATEWAY,
    kind: "HTTPRoute",
    metadata: { namespace: NS, name },
    spec: {
      parentRefs: [parent(service)],
      rules: [{ backendRefs: [{ name: backend, port: 8080 }] }],
    },
    ...(status === undefined ? {} : { status }),
  }) as KubeObject;

const badFilter: KubeObject = {
  apiVersion: "mesh.aether.dev/v1alpha1",
  kind: "HTTPFilter",
  metadata: { namespace: NS, name: "bad-filter" },
  spec: {
    targetRefs: [parent("cart")],
    headerMutation: { request: { set: [{ name: "", value: 1 }] } },
  },
};

const OBJECTS: KubeObject[] = [
  { apiVersion: "v1", kind: "Namespace", metadata: { name: NS } },
  kubeService("cart", NS, [{ name: "http", port: 8080 }]),
  kubeService("orders", NS, [{ name: "http", port: 8080 }]),
  kubeService("private", NS, [{ name: "http", port: 8080 }]),
  serviceExport("cart", NS),
  serviceExport("orders", NS),
  route("good", "cart", "cart", { parents: [theirs] }),
  route("bad-backend", "orders", "gone"),
  badFilter,
];

let fake: FakeKubeApi;
let directory: string;
let hub: RegistrarProcess;

type Condition = { type: string; status: string; reason: string; lastTransitionTime: string };
type Entry = { controllerName: string; conditions: Condition[] } & Record<string, unknown>;

/** The object at `path` as the fake holds it. */
async function get(path: string): Promise<Record<string, unknown> & KubeObject> {
  return (await (await fetch(fake.url + path)).json()) as Record<string, unknown>;
}

const routePath = (name: string) => `/apis/${GATEWAY}/namespaces/${NS}/httproutes/${name}`;
const filterPath = `/apis/mesh.aether.dev/v1alpha1/namespaces/${NS}/httpfilters/bad-filter`;

/** The entries of `list` (`parents` or `ancestors`) in the status of the object at `path`. */
async function entries(path: string, list: "parents" | "ancestors"): Promise<Entry[]> {
  const status = (await get(path)).status as Record<string, Entry[]> | undefined;
  return status?.[list] ?? [];
}

/** Our entry's conditions as `type status reason`. */
function ours(list: Entry[]): string[] | undefined {
  const entry = list.find((e) => e.controllerName === STATUS_CONTROLLER_NAME);
  return entry?.conditions.map((c) => `${c.type} ${c.status} ${c.reason}`);
}

/** The fleet condition of our entry of the route `name`, as `status reason: message`. */
async function fleetOf(name: string): Promise<string | undefined> {
  const entry = (await entries(routePath(name), "parents")).find(
    (e) => e.controllerName === STATUS_CONTROLLER_NAME,
  );
  const condition = entry?.conditions.find((c) => c.type === FLEET_CONDITION_TYPE) as
    | (Condition & { message: string })
    | undefined;
  return condition === undefined
    ? undefined
    : `${condition.status} ${condition.reason}: ${condition.message}`;
}

/** Waits until both routes' fleet conditions say the hub serves their current version. */
async function fleetSettled(): Promise<void> {
  await waitFor(
    async () =>
      (await fleetOf("good"))?.startsWith("True InSync: hub serves version ") === true &&
      (await fleetOf("bad-backend"))?.startsWith("True InSync: hub serves version ") === true,
    TIMEOUT_MS,
    "both routes' fleet condition InSync",
  );
}

/** The registrar's writes: every request but reads (and the test's own spec PATCH). */
const writes = () => fake.requests().filter((r) => r.method !== "GET" && r.body !== SPEC_FIX);
/** The registrar's status writes. */
const patches = () => writes().filter((r) => r.subresource === "status");
/** The spec edit the test sends (as kubectl patch would): the bad backend fixed. */
const SPEC_FIX = JSON.stringify({
  spec: {
    parentRefs: [parent("orders")],
    rules: [{ backendRefs: [{ name: "orders", port: 8080 }] }],
  },
});

/**
 * Resolves once every status PATCH the fake received is accounted for by a
 * status run the hub logged (the sum of their `due`): the run logs after its
 * writes, and its line reaches the test through a pipe, so a write the fake
 * already shows may still have its run's line on the way. Taking a log mark
 * before this could find that earlier run's line after the mark.
 */
async function writesLogged(): Promise<void> {
  const logged = () =>
    hub.logs
      .filter((line) => line.msg === "status run")
      .reduce((sum, line) => sum + Number(line.due), 0);
  await waitFor(() => logged() === patches().length, TIMEOUT_MS, "every status PATCH's run logged");
}

/** What the hub did after log line `mark` and the PATCHes after the `from`-th: for a failure's message. */
function diagnosis(mark: number, from: number): string {
  const lines = hub.logs
    .slice(mark)
    .filter((line) => /status|export|fleet/.test(String(line.msg)))
    .map((line) => JSON.stringify(line));
  const sent = patches()
    .slice(from)
    .map((request) => `${request.method} ${request.url} ${request.body}`);
  return ["hub log after the mark:", ...lines, "PATCHes:", ...sent].join("\n");
}

/** Resolves once the hub logged a status run after log line `mark`, returning it. */
async function statusRunAfter(mark: number): Promise<Record<string, unknown>> {
  let found: Record<string, unknown> | undefined;
  await waitFor(
    () => {
      found = hub.logs.slice(mark).find((line) => line.msg === "status run");
      return found !== undefined;
    },
    TIMEOUT_MS,
    "a status run",
  );
  return found as Record<string, unknown>;
}

beforeAll(async () => {
  fake = await startFakeKubeApi();
  for (const object of OBJECTS) fake.create(object);
  directory = await mkdtemp(join(tmpdir(), "status-write-"));
  const kubeconfig = join(directory, "kubeconfig");
  await writeFile(kubeconfig, fake.kubeConfig().exportConfig());
  hub = await startRegistrarProcess([
    ...["--cluster", "hub", "--control-cluster", "hub", "--store", "etcd"],
    ...["--etcd-endpoints", shared.etcd.endpoint, "--etcd-prefix", shared.freshPrefix()],
    ...["--export-source", "kubernetes", "--kubeconfig", kubeconfig, "--election-ttl", "2s"],
    ...["--log-level", "debug"],
  ]);
}, 60_000);

afterAll(async () => {
  await stopAllRegistrars();
  await fake?.close();
  if (directory !== undefined) await rm(directory, { recursive: true, force: true });
});

describe("the export leader writes status back to the Kubernetes objects it projects", () => {
  it("writes the routes' parents and the policy's ancestors, only through /status", async () => {
    await waitFor(
      async () =>
        ours(await entries(routePath("good"), "parents")) !== undefined &&
        ours(await entries(routePath("bad-backend"), "parents")) !== undefined &&
        ours(await entries(filterPath, "ancestors")) !== undefined,
      TIMEOUT_MS,
      "the status of the two routes and the filter",
    );
    await fleetSettled();
    const good = await entries(routePath("good"), "parents");
    expect(ours(good)).toEqual([
      "Accepted True Accepted",
      "ResolvedRefs True ResolvedRefs",
      `${FLEET_CONDITION_TYPE} True InSync`,
    ]);
    expect(good[0]).toEqual(theirs);
    expect(good[1]?.parentRef).toEqual({ group: "", kind: "Service", namespace: NS, name: "cart" });
    expect(ours(await entries(routePath("bad-backend"), "parents"))).toEqual([
      "Accepted True Accepted",
      "ResolvedRefs False BackendNotFound",
      `${FLEET_CONDITION_TYPE} True InSync`,
    ]);
    const filter = await entries(filterPath, "ancestors");
    expect(ours(filter)).toEqual(["Accepted False Invalid"]);
    expect(filter[0]?.ancestorRef).toEqual({
      group: "",
      kind: "Service",
      namespace: NS,
      name: "cart",
    });

    // Only status: every write is a PATCH of a status subresource, and specs are as created.
    expect(patches().length).toBeGreaterThanOrEqual(3);
    expect(writes()).toEqual(patches());
    for (const request of patches()) {
      expect([request.method, request.subresource]).toEqual(["PATCH", "status"]);
      expect(Object.keys(JSON.parse(request.body ?? "{}")).sort()).toEqual(["metadata", "status"]);
    }
    for (const object of OBJECTS.filter((o) => o.kind === "HTTPRoute")) {
      const now = await get(routePath(object.metadata?.name as string));
      expect(now.spec).toEqual(object.spec);
      expect(now.metadata?.generation).toBe(1);
    }
    expect((await get(filterPath)).spec).toEqual(badFilter.spec);
  });

  it("writes nothing when no status changes, and only the object whose status changes", async () => {
    await fleetSettled();
    await writesLogged();
    const before = patches().length;
    // An edit the projections do not see: an export run, no status to write.
    let mark = hub.logs.length;
    fake.update({
      ...kubeService("private", NS, [{ name: "http", port: 8080 }]),
      metadata: { namespace: NS, name: "private", labels: { edited: "1" } },
    });
    const quiet = await statusRunAfter(mark);
    expect(quiet.due, diagnosis(mark - 20, before)).toBe(0);
    expect(patches().length).toBe(before);

    // The bad backend fixed: PATCHes of that route only (its fix, then the fleet
    // condition as the hub's published status catches up), its Accepted time kept.
    const earlier = (await entries(routePath("bad-backend"), "parents"))[0]?.conditions;
    const servedBefore = await fleetOf("bad-backend");
    mark = hub.logs.length;
    // Edited as kubectl would: a PATCH of the object (its status stays, as on a real server).
    const edit = await fetch(fake.url + routePath("bad-backend"), {
      method: "PATCH",
      headers: { "Content-Type": "application/merge-patch+json" },
      body: SPEC_FIX,
    });
    expect(edit.status).toBe(200);
    await waitFor(
      async () =>
        ours(await entries(routePath("bad-backend"), "parents"))?.[1] ===
        "ResolvedRefs True ResolvedRefs",
      TIMEOUT_MS,
      "the fixed route's status",
    );
    await waitFor(
      async () => {
        const now = await fleetOf("bad-backend");
        return now !== servedBefore && now?.startsWith("True InSync: hub serves version ") === true;
      },
      TIMEOUT_MS,
      "the fixed route's fleet condition InSync at its new version",
    );
    const fixed = (await entries(routePath("bad-backend"), "parents"))[0]?.conditions;
    expect(fixed?.[0]?.lastTransitionTime).toBe(earlier?.[0]?.lastTransitionTime);
    const edited = patches().slice(before);
    expect(edited.length).toBeGreaterThanOrEqual(1);
    for (const request of edited) expect(request.url).toContain("/httproutes/bad-backend/status");
    await writesLogged();
    const written = patches().length;

    // Its own write comes back as a watch event: that run writes nothing either.
    mark = hub.logs.length;
    fake.update({
      ...kubeService("private", NS, [{ name: "http", port: 8080 }]),
      metadata: { namespace: NS, name: "private", labels: { edited: "2" } },
    });
    expect((await statusRunAfter(mark)).due, diagnosis(mark - 20, written)).toBe(0);
    expect(patches().length).toBe(written);
    expect(writes()).toEqual(patches());
    const metrics = await (await fetch(`${hub.adminUrl}/metrics`)).text();
    expect(metrics).toMatch(
      new RegExp(`aether_config_export_status_writes_total\\{result="written"\\} ${written}\\b`),
    );
  });
});
