/**
 * The Service view of one service: its header facts, its projection as a
 * tree, where it is rejected and why, and the versions seen while the page
 * is open. Follows the live feed (a new version re-renders in place).
 */
import { useMemo } from "preact/hooks";
import type { ConfigClient } from "../../api.js";
import type { LiveState } from "../../live/live-feed.js";
import { headerFacts } from "./service-facts.js";
import { ServiceHeader } from "./service-header.js";
import { historyRows } from "./service-history.js";
import { ServiceHistory } from "./service-history-table.js";
import { projectionTree } from "./service-model.js";
import { ServiceProblems } from "./service-problems.js";
import { gatherRejections } from "./service-rejections.js";
import { ProjectionTree } from "./service-tree.js";
import { type Loaded, useServiceData } from "./use-service-data.js";

/** `GetFleetStatus: <message>` for a failed answer, `` otherwise. */
function failure(name: string, loaded: Loaded<unknown>): string {
  if (loaded.state === "error") return `${name} failed: ${loaded.message}`;
  return loaded.state === "loading" ? `waiting for ${name}` : "";
}

/** The detail of `service`. */
export function ServiceDetail(props: { client: ConfigClient; live: LiveState; service: string }) {
  const { projection, status, fleet } = useServiceData(props.client, props.live, props.service);
  const current = projection.state === "ok" ? projection.value : undefined;
  const nodes = useMemo(() => (current === undefined ? [] : projectionTree(current)), [current]);
  const statusValue = status.state === "ok" ? status.value : undefined;
  const rejections = gatherRejections(
    props.service,
    statusValue,
    fleet.state === "ok" ? fleet.value : undefined,
  );
  const pending = [failure("GetConfigStatus", status), failure("GetFleetStatus", fleet)]
    .filter((text) => text !== "")
    .join("; ");
  const seen = props.live.history.get(props.service) ?? [];
  return (
    <>
      {projection.state === "loading" ? <p class="muted">Loading the projection…</p> : null}
      {projection.state === "error" ? (
        <p class="error">The projection could not be read: {projection.message}</p>
      ) : null}
      {projection.state === "ok" && current === undefined ? (
        <p class="muted">This registrar serves no projection of {props.service}.</p>
      ) : null}
      {current === undefined ? null : <ServiceHeader facts={headerFacts(current, statusValue)} />}
      {current === undefined ? null : (
        <section aria-labelledby="tree-title">
          <h2 id="tree-title">Routing</h2>
          <ProjectionTree nodes={nodes} />
        </section>
      )}
      <ServiceProblems rows={rejections} pending={pending} />
      <ServiceHistory
        rows={historyRows(seen, current?.version ?? "", current?.originCluster ?? "")}
      />
    </>
  );
}
