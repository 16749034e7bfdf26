/**
 * The Service view (`#/service/NS/NAME`): one service's projection as a
 * tree with its origin, version, signature, rejections and the versions
 * seen; without a service in the route, a searchable list of services.
 */

import { formatRoute } from "../../route.js";
import { useLive } from "../../use-live.js";
import type { ViewProps } from "../../view-props.js";
import { ServiceDetail } from "./service-detail.js";
import { ServiceList } from "./service-list.js";
import "./service.css";

/** The Service view. */
export function ServiceView({ client, live, route, navigate }: ViewProps) {
  const state = useLive(live);
  const service = route.service;
  return (
    <section aria-labelledby="view-title" class="service-view">
      <h1 id="view-title">Service{service === "" ? "s" : <span class="mono"> {service}</span>}</h1>
      {service === "" ? (
        <ServiceList
          client={client}
          live={state}
          open={(name) => navigate(formatRoute({ view: "service", service: name }))}
        />
      ) : (
        <>
          <p>
            <a href={formatRoute({ view: "service" })}>All services</a>
          </p>
          <ServiceDetail client={client} live={state} service={service} />
        </>
      )}
    </section>
  );
}
