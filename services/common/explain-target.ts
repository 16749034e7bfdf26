/**
 * Turns an explain request's arguments (`aetherctl explain`'s, or the
 * console's Explain form's) (METHOD URL, `-H` headers, `--grpc`,
 * `--port`, `--from-namespace`) into the mesh destination and the request the
 * shared evaluator decides. The destination service comes from the URL's host
 * as Kubernetes DNS names it: `name.namespace`, `name.namespace.svc`,
 * `name.namespace.svc.<cluster domain>`, or a bare `name` in the caller's
 * namespace. Any other host name is left for a VirtualHost to name
 * (`virtualHostName`, resolved by `commands/explain.ts` against the
 * projections' VirtualHost names). Pure; every problem is an
 * {@link ExplainInputError} (aetherctl turns it into its UsageError).
 */
import type { EvaluatorRequest } from "./evaluator-types.js";
import { checkServiceName, isDns1123Label } from "./service-name.js";

/** The argument an {@link ExplainInputError} is about (the console marks that field). */
export type ExplainField = "method" | "url" | "headers" | "namespace" | "port" | "grpc";

/** Arguments that cannot be explained; the message names the argument and the problem. */
export class ExplainInputError extends Error {
  override readonly name = "ExplainInputError";

  /** Creates the error about `field`. */
  constructor(
    message: string,
    readonly field: ExplainField,
  ) {
    super(message);
  }
}

/** What `aetherctl explain` evaluates. */
export interface ExplainTarget {
  /**
   * The destination service, `namespace/name`; `""` while `virtualHostName`
   * is still to be looked up.
   */
  readonly service: string;
  /**
   * The URL's host name when it is not a Kubernetes DNS name of a service
   * (for example `cart.shop.example`): the service is the one whose
   * VirtualHost names match it.
   */
  readonly virtualHostName?: string;
  /**
   * Once looked up: the VirtualHost name that matched (`*.`-prefixed for a
   * wildcard) and the VirtualHost (`namespace/name`) carrying it.
   */
  readonly virtualHost?: { readonly hostname: string; readonly virtualHost: string };
  /** The service port the caller dials. */
  readonly port: number;
  /** The name of that port, for parentRefs that use `sectionName`; undefined when not given. */
  readonly portName: string | undefined;
  /** The namespace of the calling workload. */
  readonly callerNamespace: string;
  /** The request, as the evaluator takes it. */
  readonly request: EvaluatorRequest;
  /** A one-line summary of the request, for example `GET http://checkout.shop:8080/cart`. */
  readonly summary: string;
}

/** The raw arguments of `aetherctl explain`. */
export interface ExplainArguments {
  /** The positional arguments after the flags: `METHOD URL`, or `URL` with `--grpc`. */
  readonly positionals: readonly string[];
  /** The caller's namespace (`--from-namespace`). */
  readonly fromNamespace: string | undefined;
  /** `--port`, when given. */
  readonly port: string | undefined;
  /** `--port-name`, when given. */
  readonly portName: string | undefined;
  /** Every `-H 'name: value'`. */
  readonly headers: readonly string[];
  /** `--grpc service/method`, when given. */
  readonly grpc: string | undefined;
}

const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
const IPV4 = /^\d{1,3}(\.\d{1,3}){3}$/;

/** Parses a `-H` value, `name: value`, into a header pair (the value trimmed). */
export function parseHeaderFlag(text: string): [string, string] {
  const colon = text.indexOf(":");
  const name = colon < 0 ? "" : text.slice(0, colon).trim();
  if (colon < 0 || !TOKEN.test(name)) {
    throw new ExplainInputError(`-H ${JSON.stringify(text)} is not "name: value"`, "headers");
  }
  return [name, text.slice(colon + 1).trim()];
}

/**
 * Parses the target URL. A URL without a scheme gets `http://`, so
 * `checkout.shop:8080/cart` works too. Only http and https are accepted.
 */
export function parseTargetUrl(text: string): URL {
  const withScheme = /^[a-zA-Z][a-zA-Z0-9+.-]*:\/\//.test(text) ? text : `http://${text}`;
  let url: URL;
  try {
    url = new URL(withScheme);
  } catch {
    throw new ExplainInputError(`${JSON.stringify(text)} is not a URL`, "url");
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new ExplainInputError(
      `${JSON.stringify(text)}: only http and https URLs can be explained`,
      "url",
    );
  }
  return url;
}

/**
 * The service a host name denotes for a caller in `callerNamespace`:
 * `name` → `callerNamespace/name`; `name.ns`, `name.ns.svc` and
 * `name.ns.svc.<domain>` → `ns/name`. Throws an {@link ExplainInputError} for IP
 * addresses and other host names.
 */
export function serviceOfHost(host: string, callerNamespace: string): string {
  const hostname = host.toLowerCase().replace(/\.$/, "");
  checkNotAnAddress(hostname);
  const labels = hostname.split(".");
  const [name = "", namespace = callerNamespace] = labels;
  if (!isServiceDnsName(hostname)) {
    throw new ExplainInputError(
      `cannot tell the service from host ${JSON.stringify(hostname)}: use name, name.namespace, name.namespace.svc or name.namespace.svc.cluster.local`,
      "url",
    );
  }
  const service = `${namespace}/${name}`;
  const problem = checkServiceName(service);
  if (problem !== undefined) throw new ExplainInputError(`host ${hostname}: ${problem}`, "url");
  return service;
}

/**
 * Whether a host name has the shape of a Kubernetes DNS name of a service
 * (`name`, `name.ns`, `name.ns.svc…`); other names can only be VirtualHost
 * names.
 */
export function isServiceDnsName(host: string): boolean {
  const labels = host.toLowerCase().replace(/\.$/, "").split(".");
  return labels.length <= 2 || labels[2] === "svc";
}

function checkNotAnAddress(hostname: string): void {
  if (IPV4.test(hostname) || hostname.startsWith("[")) {
    throw new ExplainInputError(
      `${hostname} is an IP address; explain needs the service's DNS name (name, name.namespace or name.namespace.svc.cluster.local)`,
      "url",
    );
  }
}

function parsePort(text: string): number {
  const port = /^\d{1,5}$/.test(text) ? Number(text) : Number.NaN;
  if (!(port >= 1 && port <= 65535)) {
    throw new ExplainInputError(
      `--port ${JSON.stringify(text)} must be a port number (1-65535)`,
      "port",
    );
  }
  return port;
}

function parseGrpc(text: string): { service: string; method: string } {
  const slash = text.lastIndexOf("/");
  const service = text.slice(0, slash).replace(/^\//, "");
  const method = text.slice(slash + 1);
  if (slash < 0 || service === "" || method === "") {
    throw new ExplainInputError(
      `--grpc ${JSON.stringify(text)} must be service/method (for example payments.v1.Ledger/Append)`,
      "grpc",
    );
  }
  return { service, method };
}

function splitPositionals(args: ExplainArguments): { method: string; target: string } {
  const positionals = args.positionals;
  if (args.grpc !== undefined && positionals.length === 1) {
    return { method: "POST", target: positionals[0] as string };
  }
  if (positionals.length !== 2) {
    throw new ExplainInputError(
      args.grpc === undefined
        ? "explain needs METHOD and URL (for example: GET http://checkout.shop:8080/cart)"
        : "explain --grpc needs the URL of the service (for example: http://ledger.payments:9090)",
      "url",
    );
  }
  const [method, target] = positionals as [string, string];
  if (!TOKEN.test(method)) {
    throw new ExplainInputError(`${JSON.stringify(method)} is not an HTTP method`, "method");
  }
  return { method, target };
}

/** Validates `aetherctl explain`'s arguments and builds what to evaluate. */
export function buildExplainTarget(args: ExplainArguments): ExplainTarget {
  const callerNamespace = args.fromNamespace;
  if (callerNamespace === undefined) {
    throw new ExplainInputError(
      "explain needs --from-namespace NS (the namespace of the calling workload)",
      "namespace",
    );
  }
  if (!isDns1123Label(callerNamespace)) {
    throw new ExplainInputError(
      `--from-namespace ${JSON.stringify(callerNamespace)} is not a namespace name (DNS-1123 label)`,
      "namespace",
    );
  }
  const { method, target } = splitPositionals(args);
  const url = parseTargetUrl(target);
  const byName = !isServiceDnsName(url.hostname);
  if (byName) checkNotAnAddress(url.hostname.toLowerCase());
  const service = byName ? "" : serviceOfHost(url.hostname, callerNamespace);
  const lookup = byName ? { virtualHostName: url.hostname.toLowerCase().replace(/\.$/, "") } : {};
  const scheme = url.protocol.slice(0, -1);
  const port =
    args.port !== undefined
      ? parsePort(args.port)
      : url.port !== ""
        ? Number(url.port)
        : scheme === "https"
          ? 443
          : 80;
  const headers = args.headers.map(parseHeaderFlag);
  if (args.grpc !== undefined) {
    const grpc = parseGrpc(args.grpc);
    return {
      service,
      ...lookup,
      port,
      portName: args.portName,
      callerNamespace,
      request: { kind: "grpc", authority: url.host, port, scheme, metadata: headers, ...grpc },
      summary: `gRPC ${grpc.service}/${grpc.method} to ${url.host}`,
    };
  }
  const path = `${url.pathname}${url.search}`;
  return {
    service,
    ...lookup,
    port,
    portName: args.portName,
    callerNamespace,
    request: { kind: "http", method, scheme, host: url.host, port, path, headers },
    summary: `${method} ${scheme}://${url.host}${path}`,
  };
}
