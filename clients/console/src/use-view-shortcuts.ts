/**
 * `useViewShortcuts`: listens for the view shortcuts (`shortcuts.ts`: `g`
 * then a view's key) on the document, goes to the view with `navigate` and
 * moves the focus to the main region.
 */
import { useEffect } from "preact/hooks";
import { shortcutStep } from "./shortcuts.js";

/** Handles the view shortcuts while the component is mounted. */
export function useViewShortcuts(navigate: (hash: string) => void): void {
  useEffect(() => {
    let pendingG: number | undefined;
    const onKey = (event: KeyboardEvent) => {
      const target = event.target as HTMLElement | null;
      const inField =
        target !== null &&
        (target.isContentEditable || ["INPUT", "SELECT", "TEXTAREA"].includes(target.tagName));
      const press = {
        key: event.key,
        at: event.timeStamp,
        modified: event.ctrlKey || event.altKey || event.metaKey,
        inField,
      };
      const step = shortcutStep(press, pendingG);
      pendingG = step.pendingG;
      if (step.view !== undefined) {
        event.preventDefault();
        navigate(`#/${step.view}`);
        document.getElementById("main")?.focus();
      }
    };
    document.addEventListener("keydown", onKey);
    return () => document.removeEventListener("keydown", onKey);
  }, [navigate]);
}
