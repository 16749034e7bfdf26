/**
 * The console's entry: one ConfigService client to the page's origin, one
 * live feed, and the app mounted on `#app`.
 */
import { render } from "preact";
import { createConfigClient } from "./api.js";
import { App } from "./app.js";
import { initialLiveState, type LiveFeed } from "./live/live-feed.js";
import "./styles.css";

const client = createConfigClient();
// Until the WatchConfig follower is built: a feed that never changes.
const state = initialLiveState(Date.now());
const live: LiveFeed = { current: () => state, subscribe: () => () => {} };
const root = document.getElementById("app");
if (root !== null) render(<App client={client} live={live} />, root);
