/**
 * `useServiceData`: what the Service view shows of one service, loaded
 * through the ConfigService: the projection (the live feed's when it has
 * one, else ListAllConfig for the service, EFFECTIVE view), this
 * registrar's GetConfigStatus and the fleet's GetFleetStatus for the
 * service. Status and fleet are asked again when the projection's version
 * changes. Failures become messages on the page, never exceptions.
 */
import { useEffect, useState } from "preact/hooks";
import type { GetConfigStatusResponse } from "../../../../../gen/aether/registry/v1/config_service_pb.js";
import type { GetFleetStatusResponse } from "../../../../../gen/aether/registry/v1/fleet_pb.js";
import type { ServiceConfigProjection } from "../../../../../gen/aether/registry/v1/projection_pb.js";
import type { ConfigClient } from "../../api.js";
import type { LiveState } from "../../live/live-feed.js";

/** One answer: loading, the value, or why it failed. */
export type Loaded<T> =
  | { readonly state: "loading" }
  | { readonly state: "ok"; readonly value: T }
  | { readonly state: "error"; readonly message: string };

/** What the Service view shows of one service. */
export interface ServiceData {
  /** The projection; `ok` with undefined when the registrar has none. */
  readonly projection: Loaded<ServiceConfigProjection | undefined>;
  readonly status: Loaded<GetConfigStatusResponse>;
  readonly fleet: Loaded<GetFleetStatusResponse>;
}

const LOADING = { state: "loading" } as const;

/** The message of a failed call. */
function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** Runs `call` into `set` unless `alive()` turned false meanwhile. */
function load<T>(call: () => Promise<T>, set: (value: Loaded<T>) => void, alive: () => boolean) {
  call().then(
    (value) => alive() && set({ state: "ok", value }),
    (error: unknown) => alive() && set({ state: "error", message: messageOf(error) }),
  );
}

/** The data of `service`, following `live` (the feed's state) for its projection. */
export function useServiceData(
  client: ConfigClient,
  live: LiveState,
  service: string,
): ServiceData {
  const fromFeed = live.projections.get(service);
  const [listed, setListed] = useState<Loaded<ServiceConfigProjection | undefined>>(LOADING);
  const [status, setStatus] = useState<Loaded<GetConfigStatusResponse>>(LOADING);
  const [fleet, setFleet] = useState<Loaded<GetFleetStatusResponse>>(LOADING);
  const needList = fromFeed === undefined;
  useEffect(() => {
    if (!needList) return;
    let alive = true;
    setListed(LOADING);
    load(
      async () => (await client.listAllConfig({ services: [service] })).projections[0],
      setListed,
      () => alive,
    );
    return () => {
      alive = false;
    };
  }, [client, service, needList]);
  const version = fromFeed?.version ?? (listed.state === "ok" ? listed.value?.version : "");
  useEffect(() => {
    let alive = true;
    load(
      () => client.getConfigStatus({}),
      setStatus,
      () => alive,
    );
    load(
      () => client.getFleetStatus({ services: [service] }),
      setFleet,
      () => alive,
    );
    return () => {
      alive = false;
    };
  }, [client, service, version]);
  const projection: Loaded<ServiceConfigProjection | undefined> =
    fromFeed === undefined ? listed : { state: "ok", value: fromFeed };
  return { projection, status, fleet };
}
