/**
 * `aether-registrar`: parses flags, starts the registrar, and drains on
 * SIGTERM or SIGINT (open watch streams end cleanly, then exit 0). SIGUSR2
 * is the operator's release of every held delete (see
 * `Registrar.releaseHolds`): no network surface, only whoever may signal the
 * process (in a distroless pod: `kubectl exec POD -- /nodejs/bin/node -e
 * 'process.kill(1, "SIGUSR2")'`).
 */
import { installCrashHandlers, parseCommandLine, runMain } from "../process/command-line.js";
import { createLogger } from "../runtime/logger.js";
import { createRegistrar, readSeedFile } from "./registrar.js";
import { parseRegistrarFlags, REGISTRAR_USAGE } from "./registrar-flags.js";

async function main(argv: readonly string[]): Promise<number> {
  const commandLine = parseCommandLine("aether-registrar", REGISTRAR_USAGE, () =>
    parseRegistrarFlags(argv),
  );
  if ("exitCode" in commandLine) return commandLine.exitCode;
  const config = commandLine.config;
  const logger = createLogger({
    level: config.logLevel,
    base: { component: "registrar", cluster: config.cluster },
  });
  const seed = config.seedFile === undefined ? [] : await readSeedFile(config.seedFile);
  const registrar = createRegistrar({ config, logger });
  installCrashHandlers(logger);
  await registrar.start();
  try {
    for (const projection of seed) {
      const revision = await registrar.store.put(projection);
      logger.info({ service: projection.service, revision }, "seeded projection");
    }
  } catch (error) {
    logger.error({ err: error }, "seeding failed; stopping");
    await registrar.stop();
    return 1;
  }
  const releaseHolds = () => registrar.releaseHolds();
  process.on("SIGUSR2", releaseHolds);
  await new Promise<void>((resolve) => {
    const stop = (signal: NodeJS.Signals) => {
      logger.info({ signal }, "draining");
      resolve();
    };
    process.once("SIGTERM", stop);
    process.once("SIGINT", stop);
  });
  process.off("SIGUSR2", releaseHolds);
  await registrar.stop();
  return 0;
}

runMain("aether-registrar", main);
