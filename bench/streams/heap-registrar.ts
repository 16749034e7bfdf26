/**
 * Bench-only entry (`npm run bench -- --idle-streams`): a registrar in this
 * process (createRegistrar compiled into dist/, memory store) holding `--services` generated
 * projections, which answers its parent's `measure` command with its memory
 * after forced full collections. Needs `node --expose-gc`; forked by
 * `run-idle-streams.ts` with the IPC channel. Not product code.
 *
 * Flags: --services M --max-streams N.
 */
import { join, resolve } from "node:path";
import { setImmediate as turn } from "node:timers/promises";
import { pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import type { Gauge } from "prom-client";
import { makeProjection } from "../../test/support/projections.js";
import { serviceAt } from "../scenario.js";
import type { HeapReading, HeapRegistrarCommand } from "./idle-protocol.js";

/** heapUsed moving less than this between two full collections counts as stable. */
const STABLE_BYTES = 32 * 1024;

// The registrar as deployed: compiled by tsc into dist/ (buildMains), not transformed by tsx,
// whose esbuild `keepNames` gives each closure a defined `name` (a property table: ~300 B more
// per closure, about 5 KiB more per lane stream).
const DIST = resolve(import.meta.dirname, "../../dist/services/registrar");
const { createRegistrar } = (await import(
  pathToFileURL(join(DIST, "registrar.js")).href
)) as typeof import("../../services/registrar/registrar.js");
const { parseRegistrarFlags } = (await import(
  pathToFileURL(join(DIST, "registrar-flags.js")).href
)) as typeof import("../../services/registrar/registrar-flags.js");

const { values } = parseArgs({
  options: { services: { type: "string" }, "max-streams": { type: "string" } },
});
const services = Number(values.services);
const room = String(Math.max(4_096, Number(values["max-streams"]) * 2 + 64));
const gc = globalThis.gc;
if (gc === undefined || process.send === undefined) {
  throw new Error("heap-registrar.ts runs forked with node --expose-gc");
}
const config = parseRegistrarFlags([
  ...["--cluster", "hub", "--store", "memory", "--listen", "127.0.0.1:0"],
  // Capacity, not the production limits; an idle connection (no stream yet) is kept.
  ...["--max-watch-streams", room, "--max-connections", room, "--max-open-streams", room],
  ...["--idle-timeout", "30m"],
]);
if (config === "help") throw new Error("unexpected help");
const registrar = createRegistrar({ config, processMetrics: false });
const address = await registrar.start();
let last = 0;
for (let i = 0; i < services; i++) {
  const { namespace, name } = serviceAt(i);
  last = await registrar.store.put(makeProjection(`${namespace}/${name}`));
}
await registrar.cache.whenSynced();
while (registrar.cache.revision < last) await turn();

/** The open streams, from the registrar's own gauge. */
async function openStreams(): Promise<number> {
  const gauge = registrar.metrics.registry.getSingleMetric("aether_config_watch_streams") as
    | Gauge
    | undefined;
  const metric = await gauge?.get();
  return metric?.values[0]?.value ?? Number.NaN;
}

/** Full collections (with a turn of the event loop between) until heapUsed stands still. */
async function measure(): Promise<HeapReading> {
  let previous = Number.POSITIVE_INFINITY;
  let collections = 0;
  let usage = process.memoryUsage();
  while (collections < 10) {
    gc?.();
    collections++;
    await turn();
    usage = process.memoryUsage();
    if (Math.abs(usage.heapUsed - previous) < STABLE_BYTES) break;
    previous = usage.heapUsed;
  }
  const { heapUsed, external, arrayBuffers, rss } = usage;
  return { heapUsed, external, arrayBuffers, rss, openStreams: await openStreams(), collections };
}

process.on("message", (command: HeapRegistrarCommand) => {
  if (command.type === "measure") {
    void measure().then((reading) => process.send?.({ type: "reading", reading }));
  } else {
    void registrar.stop().finally(() => process.exit(0));
  }
});
process.send({ type: "ready", url: address.url });
