/** A state as a word and a symbol on its colour (never colour alone). */
import { type CellState, STATE_LABEL } from "./fleet-format.js";

/** The tag of `state`; `not reported` for none. */
export function StateTag({ state }: { state: CellState | undefined }) {
  if (state === undefined) return <span class="fleet-tag muted">– not reported</span>;
  const { word, symbol } = STATE_LABEL[state];
  return (
    <span class={`fleet-tag state-${state}`}>
      <span aria-hidden="true">{symbol}</span> {word}
    </span>
  );
}
