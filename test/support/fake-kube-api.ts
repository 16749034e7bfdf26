/**
 * A FAKE Kubernetes API server, for tests only: a real HTTP server on
 * 127.0.0.1 that speaks the API's wire protocol for the eleven resources the
 * export path reads. There is no Kubernetes API server on the machines these
 * tests run on; this fake is what the Kubernetes source has been tested
 * against.
 *
 * What it implements, as the real API server does:
 * - GET list on `/api/v1/{services,configmaps,namespaces}`,
 *   `/apis/gateway.networking.k8s.io/v1/{httproutes,grpcroutes,backendtlspolicies}`,
 *   `/apis/gateway.networking.k8s.io/v1beta1/referencegrants` and
 *   `/apis/multicluster.x-k8s.io/v1alpha1/serviceexports` and
 *   `/apis/mesh.aether.dev/v1alpha1/{httpfilters,virtualhosts,meshconfigs}`
 *   (meshconfigs cluster-scoped, like namespaces), plus the
 *   namespaced forms `.../namespaces/NS/PLURAL`, answering
 *   `{kind: XList, apiVersion, metadata: {resourceVersion}, items}` with
 *   items in etcd key order (namespace, then name). Items of the core
 *   resources carry no `kind`/`apiVersion` (built-in list items omit their
 *   TypeMeta); custom resources' items do. GET of a single object.
 * - One global resourceVersion counter; create/update/delete through the
 *   test controls set `metadata.resourceVersion`, `uid`,
 *   `creationTimestamp` (second precision) and, for custom resources,
 *   `generation` (bumped when the spec changes).
 * - `?watch=true&resourceVersion=N`: newline-delimited JSON events
 *   `{type: ADDED|MODIFIED|DELETED|BOOKMARK|ERROR, object}` for changes
 *   after N, from a bounded history; with no resourceVersion (or "0"), an
 *   ADDED event per current object first. A resourceVersion older than the
 *   history gets what the real server sends: HTTP 200, one ERROR event whose
 *   object is a `Status` with code 410 and reason `Expired`, and the end of
 *   the stream. `allowWatchBookmarks=true` gets a BOOKMARK (an object of the
 *   kind with only `metadata.resourceVersion`) every `bookmarkIntervalMs`;
 *   `timeoutSeconds` ends the stream (after a bookmark) when it passes.
 * - `fieldSelector` and `labelSelector` with `=`, `==` and `!=` terms
 *   (fields: `metadata.name`, `metadata.namespace`); an object that stops or
 *   starts matching is seen as DELETED or ADDED by such a watch.
 * - PATCH (`application/merge-patch+json`) and PUT of one object and of
 *   the status subresource (`.../NAME/status`) of the kinds that have one
 *   (all but ConfigMap and ReferenceGrant), decided by
 *   `fake-kube-writes.ts` as the real server does: a status write changes
 *   only `.status`, an object write everything but `.status`; a stale
 *   `metadata.resourceVersion` in the body is a 409; a change bumps the
 *   resourceVersion and is a MODIFIED event, a write changing nothing is not.
 * - Errors as `Status` objects: 404 `NotFound` for an unknown path, a
 *   resource marked missing (a CRD not installed) or an absent object; 400
 *   for a bad selector; 405 for any method but GET, PATCH and PUT.
 *
 * What it does not implement: create and delete over HTTP (tests create
 * and delete through the controls), JSON patch, strategic merge patch and
 * server-side apply (415), authentication and authorization (any request is
 * served), discovery (`/api`, `/apis`), other resources or versions,
 * pagination (`limit` and `continue` are ignored: lists are complete),
 * `resourceVersionMatch` and lists at an old resourceVersion (a list is
 * always the current state, so it never answers 410), `sendInitialEvents`,
 * set-based label selectors, defaulting and validation (objects are stored
 * as given: no CRD schema defaults, no Service clusterIP, no Namespace
 * finalizers or name label), cascading deletion,
 * protobuf, and watch over HTTP/2 or WebSocket.
 *
 * Test controls: {@link FakeKubeApi.create}, `update`, `apply`, `delete`,
 * `expireHistory` (compact, so the next watch from an old resourceVersion
 * gets 410), `endWatches` (end open watch streams cleanly),
 * `dropConnections` (destroy the sockets of open watches), `setMissing`
 * (answer 404, as for a CRD not installed), `requests` (a log of every
 * request) and `kubeConfig` (a client configuration pointing here).
 */
import { randomUUID } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { KubeConfig } from "@kubernetes/client-node";
import type { KubeObject } from "../../services/common/kube-object.js";
import { decideWrite } from "./fake-kube-writes.js";

/** The plural names of the resources the fake serves. */
export type FakeResource =
  | "services"
  | "configmaps"
  | "namespaces"
  | "httproutes"
  | "grpcroutes"
  | "referencegrants"
  | "backendtlspolicies"
  | "serviceexports"
  | "httpfilters"
  | "virtualhosts"
  | "meshconfigs";

/** What the fake knows about each resource: where it is served and what it holds. */
const SERVED: Readonly<
  Record<
    FakeResource,
    {
      group: string;
      version: string;
      kind: string;
      namespaced: boolean;
      /** Whether the kind has the status subresource (`.../NAME/status`). */
      status?: boolean;
    }
  >
> = {
  services: { group: "", version: "v1", kind: "Service", namespaced: true, status: true },
  configmaps: { group: "", version: "v1", kind: "ConfigMap", namespaced: true },
  namespaces: { group: "", version: "v1", kind: "Namespace", namespaced: false, status: true },
  httproutes: {
    group: "gateway.networking.k8s.io",
    version: "v1",
    kind: "HTTPRoute",
    namespaced: true,
    status: true,
  },
  grpcroutes: {
    group: "gateway.networking.k8s.io",
    version: "v1",
    kind: "GRPCRoute",
    namespaced: true,
    status: true,
  },
  referencegrants: {
    group: "gateway.networking.k8s.io",
    version: "v1beta1",
    kind: "ReferenceGrant",
    namespaced: true,
  },
  backendtlspolicies: {
    group: "gateway.networking.k8s.io",
    version: "v1",
    kind: "BackendTLSPolicy",
    namespaced: true,
    status: true,
  },
  serviceexports: {
    group: "multicluster.x-k8s.io",
    version: "v1alpha1",
    kind: "ServiceExport",
    namespaced: true,
    status: true,
  },
  httpfilters: {
    group: "mesh.aether.dev",
    version: "v1alpha1",
    kind: "HTTPFilter",
    namespaced: true,
    status: true,
  },
  virtualhosts: {
    group: "mesh.aether.dev",
    version: "v1alpha1",
    kind: "VirtualHost",
    namespaced: true,
    status: true,
  },
  meshconfigs: {
    group: "mesh.aether.dev",
    version: "v1alpha1",
    kind: "MeshConfig",
    namespaced: false,
  },
};

/** One request the fake answered. */
export interface FakeRequest {
  /** The HTTP method. */
  readonly method: string;
  /** The path and query, as sent. */
  readonly url: string;
  /** The resource addressed, when the path named one the fake knows. */
  readonly resource?: FakeResource;
  /** The namespace of a namespaced path. */
  readonly namespace?: string;
  /** True for a watch (`watch=true` or `watch=1`). */
  readonly watch: boolean;
  /** The `resourceVersion` query parameter, when sent. */
  readonly resourceVersion?: string;
  /** The HTTP status answered. */
  readonly status: number;
  /** `status` for a request of the status subresource (`.../NAME/status`). */
  readonly subresource?: "status";
  /** The body of a PATCH or PUT, as sent. */
  readonly body?: string;
}

/** Options of {@link startFakeKubeApi}. */
export interface FakeKubeApiOptions {
  /** How many change events the watch history keeps (default 1000). */
  readonly historyLimit?: number;
  /** How often open watches that asked for bookmarks get one (default 1000 ms). */
  readonly bookmarkIntervalMs?: number;
}

/** A running fake API server; see the module comment. */
export interface FakeKubeApi {
  /** The base URL, `http://127.0.0.1:PORT`. */
  readonly url: string;
  /** The current (last assigned) resourceVersion. */
  readonly resourceVersion: number;
  /** Stores a new object (by its apiVersion and kind); throws when it exists. Returns the stored copy. */
  create(object: KubeObject): KubeObject;
  /** Replaces an existing object; throws when it does not exist. Returns the stored copy. */
  update(object: KubeObject): KubeObject;
  /** Creates or updates. Returns the stored copy. */
  apply(object: KubeObject): KubeObject;
  /** Deletes an object named by apiVersion, kind, namespace and name; throws when absent. */
  delete(object: KubeObject): void;
  /**
   * Compacts the history: the resourceVersion moves on by one (as if some
   * other object changed) and every older event is forgotten, so a watch
   * from any resourceVersion seen so far gets a 410. Open watches go on.
   */
  expireHistory(): void;
  /** Ends every open watch stream cleanly (as a watch timeout does). */
  endWatches(): void;
  /** Destroys the sockets of every open watch (a dropped connection). */
  dropConnections(): void;
  /** Makes a resource answer 404 (a CRD not installed), or serves it again. */
  setMissing(resource: FakeResource, missing?: boolean): void;
  /** The number of open watch streams, of one resource or of all. */
  openWatches(resource?: FakeResource): number;
  /** Every request answered so far, oldest first. */
  requests(): readonly FakeRequest[];
  /** Every BOOKMARK sent so far (resource and resourceVersion), oldest first. */
  bookmarks(): readonly { readonly resource: FakeResource; readonly resourceVersion: number }[];
  /** A client configuration for this server (plain HTTP, no credentials). */
  kubeConfig(): KubeConfig;
  /** Stops the server, destroying every connection. */
  close(): Promise<void>;
}

/** A Kubernetes `Status` object for an error. */
function status(code: number, reason: string, message: string): Record<string, unknown> {
  return {
    kind: "Status",
    apiVersion: "v1",
    metadata: {},
    status: "Failure",
    message,
    reason,
    code,
  };
}

/** A selector term: `key=value`, `key==value` or `key!=value`. */
interface Term {
  readonly key: string;
  readonly value: string;
  readonly negated: boolean;
}

/** Parses an equality-based selector; throws on anything else. */
function parseSelector(text: string | null): Term[] {
  if (text === null || text === "") return [];
  return text.split(",").map((part) => {
    const match = /^\s*([^=!\s]+)\s*(==|=|!=)\s*([^=!\s]*)\s*$/.exec(part);
    if (match === null) throw new Error(`unable to parse requirement: ${JSON.stringify(part)}`);
    return { key: match[1] as string, value: match[3] as string, negated: match[2] === "!=" };
  });
}

/** True when the values (undefined: absent) satisfy every term. */
function satisfies(terms: readonly Term[], lookup: (key: string) => string | undefined): boolean {
  return terms.every((t) => (lookup(t.key) === t.value) !== t.negated);
}

/** A stored object while the fake sets its server-side fields. */
interface MutableObject {
  apiVersion?: string;
  kind?: string;
  metadata: Record<string, unknown>;
  spec?: unknown;
}

/** A change in the history. */
interface Change {
  readonly rv: number;
  readonly resource: FakeResource;
  readonly type: "ADDED" | "MODIFIED" | "DELETED";
  readonly object: KubeObject;
  /** The object before the change (MODIFIED). */
  readonly previous?: KubeObject;
}

/** An open watch stream. */
interface OpenWatch {
  readonly resource: FakeResource;
  readonly matches: (object: KubeObject) => boolean;
  readonly response: ServerResponse;
  readonly close: () => void;
}

/** `namespace/name` (or `name`) of an object. */
function keyOf(object: KubeObject): string {
  const { namespace, name } = object.metadata ?? {};
  return namespace === undefined ? `${name}` : `${namespace}/${name}`;
}

/** The current time as the API server writes it (RFC 3339, whole seconds, UTC). */
function timestamp(): string {
  return new Date().toISOString().replace(/\.\d+Z$/, "Z");
}

/** Starts a fake API server on an ephemeral port of 127.0.0.1. */
export async function startFakeKubeApi(options: FakeKubeApiOptions = {}): Promise<FakeKubeApi> {
  const historyLimit = options.historyLimit ?? 1_000;
  const bookmarkIntervalMs = options.bookmarkIntervalMs ?? 1_000;
  const objects = new Map<FakeResource, Map<string, KubeObject>>(
    (Object.keys(SERVED) as FakeResource[]).map((r) => [r, new Map()]),
  );
  const missing = new Set<FakeResource>();
  const history: Change[] = [];
  const log: FakeRequest[] = [];
  const bookmarksSent: { resource: FakeResource; resourceVersion: number }[] = [];
  const watches = new Set<OpenWatch>();
  const sockets = new Set<Socket>();
  let rv = 100;
  /** Watches from a resourceVersion below this get 410. */
  let compactedRv = rv;

  const resourceOf = (object: KubeObject): FakeResource => {
    for (const [name, info] of Object.entries(SERVED) as [FakeResource, typeof SERVED.services][]) {
      const apiVersion = info.group === "" ? info.version : `${info.group}/${info.version}`;
      if (object.apiVersion === apiVersion && object.kind === info.kind) return name;
    }
    throw new Error(`the fake does not serve ${object.apiVersion} ${object.kind}`);
  };

  const writeEvent = (watch: OpenWatch, type: string, object: unknown) => {
    watch.response.write(`${JSON.stringify({ type, object })}\n`);
  };

  /** Sends a change to every open watch of its resource, as that watch sees it. */
  const broadcast = (change: Change) => {
    for (const watch of watches) {
      if (watch.resource === change.resource) sendChange(watch, change);
    }
  };

  const sendChange = (watch: OpenWatch, change: Change) => {
    const now = watch.matches(change.object);
    const before = change.previous !== undefined && watch.matches(change.previous);
    if (change.type === "MODIFIED") {
      if (now && before) writeEvent(watch, "MODIFIED", change.object);
      else if (now) writeEvent(watch, "ADDED", change.object);
      else if (before) writeEvent(watch, "DELETED", change.object);
    } else if (now) writeEvent(watch, change.type, change.object);
  };

  const record = (change: Change) => {
    history.push(change);
    while (history.length > historyLimit) {
      const dropped = history.shift() as Change;
      compactedRv = dropped.rv;
    }
    broadcast(change);
  };

  const store = (object: KubeObject, mode: "create" | "update" | "apply"): KubeObject => {
    const resource = resourceOf(object);
    const info = SERVED[resource];
    const key = keyOf(object);
    if (typeof object.metadata?.name !== "string") throw new Error("the object has no name");
    if (info.namespaced !== (object.metadata.namespace !== undefined)) {
      throw new Error(
        `${info.kind} ${key}: namespace ${info.namespaced ? "missing" : "not allowed"}`,
      );
    }
    const existing = objects.get(resource)?.get(key);
    if (mode === "create" && existing !== undefined) throw new Error(`${info.kind} ${key} exists`);
    if (mode === "update" && existing === undefined)
      throw new Error(`${info.kind} ${key} not found`);
    rv++;
    const copy = structuredClone(object) as MutableObject;
    const metadata = copy.metadata;
    metadata.resourceVersion = String(rv);
    const previous = existing as MutableObject | undefined;
    metadata.uid = previous?.metadata.uid ?? metadata.uid ?? randomUUID();
    metadata.creationTimestamp = existing?.metadata?.creationTimestamp ?? timestamp();
    if (info.group !== "") {
      const old = existing?.metadata?.generation ?? 0;
      const specChanged = JSON.stringify(existing?.spec) !== JSON.stringify(copy.spec);
      metadata.generation = existing === undefined ? 1 : specChanged ? old + 1 : old;
    }
    objects.get(resource)?.set(key, copy);
    record(
      existing === undefined
        ? { rv, resource, type: "ADDED", object: copy }
        : { rv, resource, type: "MODIFIED", object: copy, previous: existing },
    );
    return structuredClone(copy);
  };

  /** Resolves a request path to a resource, namespace and optional object name. */
  const route = (
    path: string,
  ): { resource: FakeResource; namespace?: string; name?: string; status?: true } | undefined => {
    const parts = path.split("/").filter((p) => p !== "");
    let rest: string[];
    let group: string;
    let version: string;
    if (parts[0] === "api" && parts.length >= 3) {
      group = "";
      version = parts[1] as string;
      rest = parts.slice(2);
    } else if (parts[0] === "apis" && parts.length >= 4) {
      group = parts[1] as string;
      version = parts[2] as string;
      rest = parts.slice(3);
    } else return undefined;
    let namespace: string | undefined;
    // `/api/v1/namespaces/NAME` is a Namespace; `/namespaces/NS/PLURAL...` is namespaced.
    if (rest[0] === "namespaces" && rest.length >= 3) {
      namespace = rest[1];
      rest = rest.slice(2);
    }
    const status = rest.length === 3 && rest[2] === "status";
    if (status) rest = rest.slice(0, 2);
    if (rest.length < 1 || rest.length > 2) return undefined;
    const resource = rest[0] as FakeResource;
    const info = SERVED[resource];
    if (info === undefined || info.group !== group || info.version !== version) return undefined;
    if (namespace !== undefined && !info.namespaced) return undefined;
    return {
      resource,
      ...(namespace === undefined ? {} : { namespace }),
      name: rest[1],
      ...(status ? { status } : {}),
    };
  };

  /** The object as a list item: built-in kinds lose their TypeMeta, as on the real server. */
  const asItem = (resource: FakeResource, object: KubeObject): KubeObject => {
    if (SERVED[resource].group !== "") return object;
    const { apiVersion: _a, kind: _k, ...rest } = object;
    return rest;
  };

  const serveWatch = (
    response: ServerResponse,
    resource: FakeResource,
    matches: (object: KubeObject) => boolean,
    query: URLSearchParams,
  ) => {
    const info = SERVED[resource];
    const apiVersion = info.group === "" ? info.version : `${info.group}/${info.version}`;
    const since = query.get("resourceVersion") ?? "";
    response.writeHead(200, { "Content-Type": "application/json", "Cache-Control": "no-cache" });
    response.flushHeaders();
    const timers: NodeJS.Timeout[] = [];
    const watch: OpenWatch = {
      resource,
      matches,
      response,
      close: () => {
        for (const t of timers) clearTimeout(t);
        watches.delete(watch);
      },
    };
    response.on("close", watch.close);
    response.on("error", watch.close);
    if (since !== "" && since !== "0") {
      const from = Number(since);
      if (!Number.isSafeInteger(from) || from < compactedRv) {
        const message = `too old resource version: ${since} (${compactedRv})`;
        writeEvent(watch, "ERROR", status(410, "Expired", message));
        response.end();
        return;
      }
      watches.add(watch);
      for (const change of history) {
        if (change.rv > from && change.resource === resource) sendChange(watch, change);
      }
    } else {
      watches.add(watch);
      for (const object of sortedObjects(resource)) {
        if (matches(object)) writeEvent(watch, "ADDED", object);
      }
    }
    const bookmark = () => {
      writeEvent(watch, "BOOKMARK", {
        kind: info.kind,
        apiVersion,
        metadata: { resourceVersion: String(rv) },
      });
      bookmarksSent.push({ resource, resourceVersion: rv });
    };
    if (query.get("allowWatchBookmarks") === "true") {
      timers.push(setInterval(bookmark, bookmarkIntervalMs));
    }
    const timeoutSeconds = Number(query.get("timeoutSeconds") ?? "0");
    if (timeoutSeconds > 0) {
      timers.push(
        setTimeout(() => {
          if (query.get("allowWatchBookmarks") === "true") bookmark();
          response.end();
        }, timeoutSeconds * 1_000),
      );
    }
  };

  const sortedObjects = (resource: FakeResource): KubeObject[] =>
    [...(objects.get(resource)?.values() ?? [])].sort((a, b) => {
      const ka = keyOf(a);
      const kb = keyOf(b);
      return ka < kb ? -1 : ka > kb ? 1 : 0;
    });

  /** Answers a PATCH or PUT of one object or its status (see `fake-kube-writes.ts`). */
  const serveWrite = (
    target: { resource: FakeResource; namespace?: string; name?: string; status?: true },
    request: IncomingMessage,
    body: string,
  ): { code: number; body: unknown } => {
    const { resource, namespace, name } = target;
    const info = SERVED[resource];
    if (name === undefined) {
      return { code: 405, body: status(405, "MethodNotAllowed", `${request.method} of a list`) };
    }
    const key = namespace === undefined ? name : `${namespace}/${name}`;
    const outcome = decideWrite({
      method: request.method ?? "",
      status: target.status === true,
      contentType: (request.headers["content-type"] ?? "").split(";")[0]?.trim() ?? "",
      body,
      hasStatusSubresource: info.status === true,
      existing: objects.get(resource)?.get(key),
      what: info.group === "" ? resource : `${resource}.${info.group}`,
      name,
    });
    if (!("object" in outcome)) {
      return { code: outcome.code, body: status(outcome.code, outcome.reason, outcome.message) };
    }
    return { code: 200, body: outcome.changed ? store(outcome.object, "update") : outcome.object };
  };

  const server = createServer((request, response) => {
    const url = new URL(request.url ?? "/", "http://fake");
    const query = url.searchParams;
    const isWatch = query.get("watch") === "true" || query.get("watch") === "1";
    const target = route(url.pathname);
    const reply = (code: number, body: unknown, sent?: string) => {
      log.push({
        method: request.method ?? "",
        url: request.url ?? "",
        ...(target === undefined ? {} : { resource: target.resource }),
        ...(target?.namespace === undefined ? {} : { namespace: target.namespace }),
        watch: isWatch,
        ...(query.has("resourceVersion")
          ? { resourceVersion: query.get("resourceVersion") as string }
          : {}),
        status: code,
        ...(target?.status === true ? { subresource: "status" as const } : {}),
        ...(sent === undefined ? {} : { body: sent }),
      });
      if (body === undefined) return;
      response.writeHead(code, { "Content-Type": "application/json" });
      response.end(JSON.stringify(body));
    };
    const write = request.method === "PATCH" || request.method === "PUT";
    if (request.method !== "GET" && !write) {
      reply(
        405,
        status(
          405,
          "MethodNotAllowed",
          `the fake serves only GET, PATCH and PUT, not ${request.method}`,
        ),
      );
      return;
    }
    if (target === undefined || missing.has(target.resource)) {
      reply(404, status(404, "NotFound", "the server could not find the requested resource"));
      return;
    }
    if (write) {
      const chunks: Buffer[] = [];
      request.on("data", (chunk: Buffer) => chunks.push(chunk));
      request.on("end", () => {
        const sent = Buffer.concat(chunks).toString("utf8");
        const answer = serveWrite(target, request, sent);
        reply(answer.code, answer.body, sent);
      });
      return;
    }
    if (target.status === true) {
      reply(405, status(405, "MethodNotAllowed", "the fake serves GET of objects, not of /status"));
      return;
    }
    const { resource, namespace, name } = target;
    const info = SERVED[resource];
    let fields: Term[];
    let labels: Term[];
    try {
      fields = parseSelector(query.get("fieldSelector"));
      labels = parseSelector(query.get("labelSelector"));
      for (const f of fields) {
        if (f.key !== "metadata.name" && f.key !== "metadata.namespace") {
          throw new Error(`field label not supported: ${f.key}`);
        }
      }
    } catch (error) {
      reply(400, status(400, "BadRequest", (error as Error).message));
      return;
    }
    const matches = (object: KubeObject) =>
      (namespace === undefined || object.metadata?.namespace === namespace) &&
      satisfies(fields, (key) =>
        key === "metadata.name" ? object.metadata?.name : object.metadata?.namespace,
      ) &&
      satisfies(labels, (key) => object.metadata?.labels?.[key]);

    if (name !== undefined) {
      const object = objects
        .get(resource)
        ?.get(namespace === undefined ? name : `${namespace}/${name}`);
      if (object === undefined || isWatch) {
        const what = info.group === "" ? resource : `${resource}.${info.group}`;
        reply(404, status(404, "NotFound", `${what} "${name}" not found`));
      } else reply(200, object);
      return;
    }
    if (isWatch) {
      reply(200, undefined);
      serveWatch(response, resource, matches, query);
      return;
    }
    reply(200, {
      kind: `${info.kind}List`,
      apiVersion: info.group === "" ? info.version : `${info.group}/${info.version}`,
      metadata: { resourceVersion: String(rv) },
      items: sortedObjects(resource)
        .filter(matches)
        .map((o) => asItem(resource, o)),
    });
  });
  server.on("connection", (socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  return {
    url,
    get resourceVersion() {
      return rv;
    },
    create: (object) => store(object, "create"),
    update: (object) => store(object, "update"),
    apply: (object) => store(object, "apply"),
    delete(object) {
      const resource = resourceOf(object);
      const key = keyOf(object);
      const existing = objects.get(resource)?.get(key);
      if (existing === undefined) throw new Error(`${object.kind} ${key} not found`);
      objects.get(resource)?.delete(key);
      rv++;
      const gone = structuredClone(existing) as MutableObject;
      gone.metadata.resourceVersion = String(rv);
      record({ rv, resource, type: "DELETED", object: gone });
    },
    expireHistory() {
      rv++;
      compactedRv = rv;
      history.length = 0;
    },
    endWatches() {
      for (const watch of [...watches]) {
        watch.close();
        watch.response.end();
      }
    },
    dropConnections() {
      for (const watch of [...watches]) {
        watch.close();
        watch.response.socket?.destroy();
      }
    },
    setMissing(resource, isMissing = true) {
      if (isMissing) missing.add(resource);
      else missing.delete(resource);
    },
    openWatches: (resource) =>
      [...watches].filter((w) => resource === undefined || w.resource === resource).length,
    requests: () => [...log],
    bookmarks: () => [...bookmarksSent],
    kubeConfig() {
      const config = new KubeConfig();
      config.loadFromClusterAndUser(
        { name: "fake", server: url, skipTLSVerify: true },
        { name: "fake" },
      );
      return config;
    },
    async close() {
      for (const watch of [...watches]) watch.close();
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
