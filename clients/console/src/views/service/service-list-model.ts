/**
 * The Service view's list of services (no service in the route): the
 * services known (the live feed's projections, else a ListAllConfig
 * listing) filtered by what the operator typed, and where the arrow keys
 * move the focus. Pure.
 */

/** One service in the list. */
export interface ServiceItem {
  readonly service: string;
  readonly origin: string;
  readonly version: string;
}

/**
 * The items whose service contains every word of `query` (case-insensitive;
 * words separated by spaces), sorted by service, `@mesh` last.
 */
export function filterServices(items: readonly ServiceItem[], query: string): ServiceItem[] {
  const words = query
    .toLowerCase()
    .split(/\s+/)
    .filter((w) => w !== "");
  return items
    .filter((item) => words.every((w) => item.service.toLowerCase().includes(w)))
    .sort((a, b) => {
      const mesh = Number(a.service.startsWith("@")) - Number(b.service.startsWith("@"));
      return mesh !== 0 ? mesh : a.service.localeCompare(b.service);
    });
}

/** The focused entry's index after `key` (`ArrowDown`, `ArrowUp`, `Home`, `End`) in a list of `count`; clamped. */
export function moveHighlight(index: number, key: string, count: number): number {
  if (count === 0) return 0;
  const next =
    key === "ArrowDown"
      ? index + 1
      : key === "ArrowUp"
        ? index - 1
        : key === "Home"
          ? 0
          : key === "End"
            ? count - 1
            : index;
  return Math.min(Math.max(next, 0), count - 1);
}
