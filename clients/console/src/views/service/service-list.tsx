/**
 * The Service view without a service: a search box over the services (the
 * live feed's projections, or a ListAllConfig listing while the feed has
 * none) and their links. Typing filters; Enter in the box opens the first
 * match; ArrowDown goes into the list, ArrowUp/ArrowDown/Home/End move
 * between the links (Enter opens one), Escape goes back to the box.
 */
import { useEffect, useRef, useState } from "preact/hooks";
import type { ConfigClient } from "../../api.js";
import type { LiveState } from "../../live/live-feed.js";
import { formatRoute } from "../../route.js";
import { filterServices, moveHighlight, type ServiceItem } from "./service-list-model.js";

/** Every effective projection the registrar serves, page by page. */
async function listAll(client: ConfigClient): Promise<ServiceItem[]> {
  const items: ServiceItem[] = [];
  let pageToken = "";
  do {
    const page = await client.listAllConfig({ pageToken, pageSize: 500 });
    for (const p of page.projections) {
      items.push({ service: p.service, origin: p.originCluster, version: p.version });
    }
    pageToken = page.nextPageToken;
  } while (pageToken !== "");
  return items;
}

/** The feed's services as list items. */
function fromFeed(live: LiveState): ServiceItem[] {
  return [...live.projections.values()].map((p) => ({
    service: p.service,
    origin: p.originCluster,
    version: p.version,
  }));
}

/** The searchable list; `open` goes to a service. */
export function ServiceList(props: {
  client: ConfigClient;
  live: LiveState;
  open: (service: string) => void;
}) {
  const [query, setQuery] = useState("");
  const searchBox = useRef<HTMLInputElement>(null);
  const [listed, setListed] = useState<ServiceItem[] | string>("loading");
  const useFeed = props.live.projections.size > 0;
  useEffect(() => {
    if (useFeed) return;
    let alive = true;
    listAll(props.client).then(
      (items) => alive && setListed(items),
      (error: unknown) => alive && setListed(`ListAllConfig failed: ${String(error)}`),
    );
    return () => {
      alive = false;
    };
  }, [props.client, useFeed]);
  const all = useFeed ? fromFeed(props.live) : typeof listed === "string" ? [] : listed;
  const shown = filterServices(all, query);
  /** Moves focus from entry `index` (-1: the search box) by `key`; true when it handled the key. */
  const moveFocus = (index: number, key: string): boolean => {
    if (!["ArrowDown", "ArrowUp", "Home", "End", "Escape"].includes(key)) return false;
    const next =
      key === "Escape" || (key === "ArrowUp" && index <= 0)
        ? -1
        : moveHighlight(index, key, shown.length);
    const target =
      next === -1 ? searchBox.current : document.getElementById(`service-option-${next}`);
    target?.focus();
    return true;
  };
  const onSearchKey = (event: KeyboardEvent) => {
    const first = shown[0];
    if (event.key === "Enter" && first !== undefined) props.open(first.service);
    else if (event.key === "ArrowDown" && moveFocus(-1, "Home")) event.preventDefault();
  };
  return (
    <>
      <label class="search">
        Find a service{" "}
        <input
          ref={searchBox}
          type="search"
          aria-controls="service-options"
          aria-describedby="service-count"
          value={query}
          placeholder="namespace/name"
          onInput={(event) => setQuery(event.currentTarget.value)}
          onKeyDown={onSearchKey}
        />
      </label>
      {typeof listed === "string" && !useFeed && listed !== "loading" ? (
        <p class="error">{listed}</p>
      ) : null}
      <p class="muted" id="service-count">
        {shown.length} of {all.length} services; Enter opens the first, arrow keys move through the
        list
      </p>
      <ul id="service-options" class="service-options" aria-label="Services">
        {shown.map((item, i) => (
          <li key={item.service}>
            <a
              id={`service-option-${i}`}
              href={formatRoute({ view: "service", service: item.service })}
              onKeyDown={(event) => moveFocus(i, event.key) && event.preventDefault()}
            >
              {item.service}
            </a>{" "}
            <span class="muted mono">
              {item.origin} {item.version}
            </span>
          </li>
        ))}
      </ul>
    </>
  );
}
