/**
 * The console's entry: one ConfigService client to the page's origin, one
 * live feed following WatchConfig, and the app mounted on `#app`.
 */
import { render } from "preact";
import { createConfigClient } from "./api.js";
import { App } from "./app.js";
import { followWatch } from "./live/follow-watch.js";
import "./styles.css";

const client = createConfigClient();
// Opened by the shell once the first view has its data (`app.tsx`).
const live = followWatch(client, { deferred: true });
const root = document.getElementById("app");
if (root !== null) render(<App client={client} live={live} />, root);
