/** The Live view (placeholder until it is built). */
import type { ViewProps } from "../../view-props.js";

/** The Live view. */
export function LiveView(_props: ViewProps) {
  return (
    <section aria-labelledby="view-title">
      <h1 id="view-title">Live</h1>
    </section>
  );
}
