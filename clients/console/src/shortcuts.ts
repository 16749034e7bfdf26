/**
 * The console's keyboard shortcuts between views, pure: `g` then `f`
 * (Fleet), `s` (Service), `e` (Explain) or `l` (Live) within
 * {@link SEQUENCE_MS}, as the header's links announce (`aria-keyshortcuts`).
 * Keys typed into a form control, or with a modifier, are never shortcuts.
 */
import type { ViewName } from "./route.js";

/** How long after `g` the second key counts, in milliseconds. */
export const SEQUENCE_MS = 1_500;

/** The second key of each view's shortcut. */
export const VIEW_KEYS: Readonly<Record<string, ViewName>> = {
  f: "fleet",
  s: "service",
  e: "explain",
  l: "live",
};

/** A key press as the shortcuts read it. */
export interface KeyPress {
  /** `KeyboardEvent.key`. */
  readonly key: string;
  /** When (ms). */
  readonly at: number;
  /** Whether Ctrl, Alt or Meta was held. */
  readonly modified: boolean;
  /** Whether it went to a form control (input, select, textarea, contenteditable). */
  readonly inField: boolean;
}

/** What a press does: the view to go to, and the pending `g` (its time) for the next press. */
export interface ShortcutStep {
  readonly view: ViewName | undefined;
  readonly pendingG: number | undefined;
}

/** The step for `press` after a `g` pressed at `pendingG` (undefined: none pending). */
export function shortcutStep(press: KeyPress, pendingG: number | undefined): ShortcutStep {
  if (press.modified || press.inField) return { view: undefined, pendingG: undefined };
  const key = press.key.toLowerCase();
  if (pendingG !== undefined && press.at - pendingG <= SEQUENCE_MS && key in VIEW_KEYS) {
    return { view: VIEW_KEYS[key], pendingG: undefined };
  }
  return { view: undefined, pendingG: key === "g" ? press.at : undefined };
}
