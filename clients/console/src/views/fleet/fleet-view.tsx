/** The Fleet view (placeholder until it is built). */
import type { ViewProps } from "../../view-props.js";

/** The Fleet view. */
export function FleetView(_props: ViewProps) {
  return (
    <section aria-labelledby="view-title">
      <h1 id="view-title">Fleet</h1>
    </section>
  );
}
