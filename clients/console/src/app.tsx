/**
 * The console's shell: the header (the views, the stream's state) and the
 * view the URL's hash names. Views get the client, the live feed and the
 * route (`view-props.ts`); the shell owns nothing else.
 */
import { useEffect, useState } from "preact/hooks";
import type { ConfigClient } from "./api.js";
import { ConnectionBadge } from "./live/connection-badge.js";
import type { LiveFeed } from "./live/live-feed.js";
import { parseRoute, type ViewName } from "./route.js";
import { useViewShortcuts } from "./use-view-shortcuts.js";
import type { ViewProps } from "./view-props.js";
import { ExplainView } from "./views/explain/explain-view.js";
import { FleetView } from "./views/fleet/fleet-view.js";
import { LiveView } from "./views/live/live-view.js";
import { ServiceView } from "./views/service/service-view.js";

const VIEWS: Record<ViewName, (props: ViewProps) => preact.JSX.Element> = {
  fleet: FleetView,
  service: ServiceView,
  explain: ExplainView,
  live: LiveView,
};

const NAV: readonly { view: ViewName; label: string; key: string }[] = [
  { view: "fleet", label: "Fleet", key: "f" },
  { view: "service", label: "Service", key: "s" },
  { view: "explain", label: "Explain", key: "e" },
  { view: "live", label: "Live", key: "l" },
];

/** Goes to `hash`, pushing a history entry or replacing the current one. */
function navigate(hash: string, options: { replace?: boolean } = {}): void {
  if (options.replace === true) window.history.replaceState(null, "", hash);
  else window.history.pushState(null, "", hash);
  window.dispatchEvent(new HashChangeEvent("hashchange"));
}

/** How long the live stream waits for the first view's data at most, in milliseconds. */
const STREAM_WAIT_MS = 1_500;

/** The console: the header and the routed view. */
export function App({ client, live }: { client: ConfigClient; live: LiveFeed }) {
  const [hash, setHash] = useState(window.location.hash);
  useEffect(() => {
    const onHash = () => setHash(window.location.hash);
    window.addEventListener("hashchange", onHash);
    return () => window.removeEventListener("hashchange", onHash);
  }, []);
  useViewShortcuts(navigate);
  const route = parseRoute(hash);
  const View = VIEWS[route.view];
  // The live stream opens once the Fleet view has its first answer (at 1,000 services its
  // snapshot would compete with that call), at once for the views that read the stream,
  // and after STREAM_WAIT_MS in any case.
  useEffect(() => {
    if (route.view !== "fleet") live.start();
    const timer = setTimeout(() => live.start(), STREAM_WAIT_MS);
    return () => clearTimeout(timer);
  }, [route.view, live]);
  return (
    <>
      <a class="skip-link" href="#main">
        Skip to content
      </a>
      <header class="top">
        <span class="brand">aether</span>
        <nav aria-label="Views">
          {NAV.map(({ view, label, key }) => (
            <a
              key={view}
              href={`#/${view}`}
              aria-current={route.view === view ? "page" : undefined}
              aria-keyshortcuts={`g ${key}`}
            >
              {label}
            </a>
          ))}
        </nav>
        <ConnectionBadge live={live} />
      </header>
      <main id="main" tabIndex={-1}>
        <View
          client={client}
          live={live}
          route={route}
          navigate={navigate}
          ready={() => live.start()}
        />
      </main>
    </>
  );
}
