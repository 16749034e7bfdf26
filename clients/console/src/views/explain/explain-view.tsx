/** The Explain view (placeholder until it is built). */
import type { ViewProps } from "../../view-props.js";

/** The Explain view. */
export function ExplainView(_props: ViewProps) {
  return (
    <section aria-labelledby="view-title">
      <h1 id="view-title">Explain</h1>
    </section>
  );
}
