/**
 * The ConfigService `aetherctl dashboard` serves to the console: each read
 * method calls the registrar through aetherctl's generated client (its URL
 * and TLS identity) with the request message only, so nothing of the
 * browser's request but the message reaches the registrar. A failed call
 * answers with the registrar's code, message and details. ReportAppliedConfig
 * is not forwarded: a browser is not an agent.
 */
import {
  type CallOptions,
  Code,
  ConnectError,
  type ConnectRouter,
  type HandlerContext,
} from "@connectrpc/connect";
import { ConfigService } from "../../../gen/aether/registry/v1/config_service_pb.js";
import type { RegistrarClient } from "../registrar-client.js";

/** The message a ReportAppliedConfig through the dashboard is refused with. */
export const REPORT_REFUSED =
  "the dashboard does not forward ReportAppliedConfig: only agents report what they applied, to the registrar itself";

/**
 * The error a failed upstream call is answered with: the same code, raw
 * message and details, without the registrar's response headers and
 * trailers (they describe that response, not this one). A failure that
 * never reached the registrar (refused, unreachable, TLS) is described by
 * `describe` when given.
 */
export function downstreamError(
  error: unknown,
  describe?: (error: ConnectError) => string | undefined,
): ConnectError {
  const upstream = ConnectError.from(error);
  const message = describe?.(upstream) ?? upstream.rawMessage;
  const downstream = new ConnectError(message, upstream.code);
  downstream.details = [...upstream.details];
  return downstream;
}

/** How the gateway calls the registrar. */
export interface ConfigGatewayOptions {
  /** The generated client of the registrar, with aetherctl's connection settings. */
  readonly client: RegistrarClient;
  /** The deadline of each unary call to the registrar, in milliseconds. */
  readonly timeoutMs: number;
  /** Rewrites the message of a call that failed before the registrar answered; optional. */
  readonly describeFailure?: (error: ConnectError) => string | undefined;
}

/**
 * Registers the gateway's ConfigService on `router`. A unary call gets the
 * shorter of `timeoutMs` and the browser's own deadline; every call is
 * cancelled upstream when the browser goes away (the handler's signal).
 * WatchConfig relays each event as it arrives; the upstream stream's end
 * ends the browser's, and its error ends it with the same code.
 */
export function registerConfigGateway(router: ConnectRouter, options: ConfigGatewayOptions): void {
  const { client, timeoutMs, describeFailure } = options;
  const unary = (context: HandlerContext): CallOptions => ({
    signal: context.signal,
    timeoutMs: Math.min(timeoutMs, context.timeoutMs() ?? timeoutMs),
  });
  const forward = async <T>(call: () => Promise<T>): Promise<T> => {
    try {
      return await call();
    } catch (error) {
      throw downstreamError(error, describeFailure);
    }
  };
  router.service(ConfigService, {
    listConfig: (request, context) => forward(() => client.listConfig(request, unary(context))),
    listAllConfig: (request, context) =>
      forward(() => client.listAllConfig(request, unary(context))),
    getConfigStatus: (request, context) =>
      forward(() => client.getConfigStatus(request, unary(context))),
    getFleetStatus: (request, context) =>
      forward(() => client.getFleetStatus(request, unary(context))),
    async *watchConfig(request, context) {
      try {
        yield* client.watchConfig(request, { signal: context.signal });
      } catch (error) {
        throw downstreamError(error, describeFailure);
      }
    },
    reportAppliedConfig() {
      throw new ConnectError(REPORT_REFUSED, Code.PermissionDenied);
    },
  });
}
