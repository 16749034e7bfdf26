import { createServer } from "node:net";
import { describe, expect, it } from "vitest";
import { runAetherctl } from "../../clients/aetherctl/aetherctl.js";
import { AETHERCTL_USAGE, COMMAND_USAGE } from "../../clients/aetherctl/aetherctl-flags.js";
import { runAetherctlInProcess } from "../support/aetherctl-in-process.js";

/** A loopback URL nothing listens on (a port that was free a moment ago). */
async function deadUrl(): Promise<string> {
  const server = createServer();
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  const { port } = server.address() as { port: number };
  await new Promise<void>((done) => server.close(() => done()));
  return `http://127.0.0.1:${port}`;
}

const run = runAetherctlInProcess;

describe("runAetherctl exit codes", () => {
  it.each([
    { argv: ["--help"], code: 0, stdout: AETHERCTL_USAGE, stderr: "" },
    { argv: ["status", "--help"], code: 0, stdout: COMMAND_USAGE.status, stderr: "" },
    {
      argv: [],
      code: 2,
      stdout: "",
      stderr: `aetherctl: no command given\n\n${AETHERCTL_USAGE}`,
    },
    {
      argv: ["get", "Shop/Checkout"],
      code: 2,
      stdout: "",
      stderr: `aetherctl: service "Shop/Checkout": namespace "Shop" is not a DNS-1123 label (lower-case letters, digits and "-", at most 63 characters)\n\n${COMMAND_USAGE.get}`,
    },
  ])("$argv exits $code", async ({ argv, ...want }) => {
    expect(await run(argv)).toEqual(want);
  });

  it("exits 1 with a clear message when nothing listens at the registrar URL", async () => {
    const url = await deadUrl();
    const result = await run(["--registrar", url, "list"]);
    expect(result).toEqual({
      code: 1,
      stdout: "",
      stderr: `aetherctl: unavailable: cannot reach the registrar at ${url} (connect ECONNREFUSED ${url.slice("http://".length)}); is it running? (set --registrar URL or $AETHER_REGISTRAR)\n`,
    });
  });

  it("exits 130 when interrupted during a call", async () => {
    const interrupt = new AbortController();
    interrupt.abort();
    const code = await runAetherctl(["--registrar", await deadUrl(), "status"], {
      stdout: () => {},
      stderr: () => {},
      env: {},
      isTty: false,
      signal: interrupt.signal,
    });
    expect(code).toBe(130);
  });
});
