/** The Service view (placeholder until it is built). */
import type { ViewProps } from "../../view-props.js";

/** The Service view. */
export function ServiceView(_props: ViewProps) {
  return (
    <section aria-labelledby="view-title">
      <h1 id="view-title">Service</h1>
    </section>
  );
}
