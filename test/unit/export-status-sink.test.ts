import { afterEach, describe, expect, it } from "vitest";
import type { StatusInputs } from "../../services/common/status-plan.js";
import {
  createExportController,
  type ExportController,
} from "../../services/registrar/export/export-controller.js";
import type { StatusSink } from "../../services/registrar/export/status-writer.js";
import { createMemoryStore } from "../../services/registrar/store/memory-store.js";
import { createManualLeadership } from "../support/manual-leadership.js";
import { createMemoryObjectSource, readManifestObjects } from "../support/memory-source.js";
import { waitFor } from "../support/wait.js";

const controllers: ExportController[] = [];
afterEach(async () => {
  await Promise.all(controllers.splice(0).map((c) => c.stop()));
});

/** A sink that records what the controller hands it. */
function recordingSink() {
  const calls = { updates: [] as StatusInputs[], pauses: 0, stops: 0 };
  const sink: StatusSink = {
    update: (inputs) => void calls.updates.push(inputs),
    pause: () => void calls.pauses++,
    stop: async () => void calls.stops++,
  };
  return { calls, sink };
}

describe("export controller: the status sink", () => {
  it("gets each reconcile's snapshot and projected services while leader, a pause when deposed, a stop", async () => {
    const objects = await readManifestObjects();
    const source = createMemoryObjectSource(objects);
    const leadership = createManualLeadership();
    const { calls, sink } = recordingSink();
    const controller = createExportController({
      source,
      store: createMemoryStore({ origin: "hub" }),
      origin: "hub",
      controlCluster: undefined,
      leadership,
      debounceMs: 5,
      statusSink: sink,
    });
    controllers.push(controller);
    controller.start();
    await source.whenSynced();
    expect(calls.updates).toEqual([]); // not the leader: no reconcile, no status
    leadership.elect();
    await waitFor(() => calls.updates.length === 1, 5_000, "the first reconcile's status inputs");
    const [first] = calls.updates;
    expect(first?.objects).toBe(source.snapshot());
    expect([...(first?.services ?? [])].sort()).toHaveLength(controller.status().services);
    expect(first?.rejections).toEqual(controller.status().rejections);

    leadership.depose();
    await waitFor(() => calls.pauses === 1, 5_000, "the pause");
    expect(calls.updates).toHaveLength(1);
    await controller.stop();
    expect(calls.stops).toBe(1);
  });
});
