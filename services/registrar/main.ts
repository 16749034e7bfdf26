/**
 * `aether-registrar`: parses flags, starts the registrar, and drains on
 * SIGTERM or SIGINT (open watch streams end cleanly, then exit 0).
 */
import { createLogger } from "./logger.js";
import { createRegistrar, readSeedFile } from "./registrar.js";
import { parseRegistrarFlags, REGISTRAR_USAGE, UsageError } from "./registrar-flags.js";

async function main(argv: readonly string[]): Promise<number> {
  let parsed: ReturnType<typeof parseRegistrarFlags>;
  try {
    parsed = parseRegistrarFlags(argv);
  } catch (error) {
    if (error instanceof UsageError) {
      process.stderr.write(`aether-registrar: ${error.message}\n\n${REGISTRAR_USAGE}`);
      return 2;
    }
    throw error;
  }
  if (parsed === "help") {
    process.stdout.write(REGISTRAR_USAGE);
    return 0;
  }
  const config = parsed;
  const logger = createLogger({
    level: config.logLevel,
    base: { component: "registrar", cluster: config.cluster },
  });
  const seed = config.seedFile === undefined ? [] : await readSeedFile(config.seedFile);
  const registrar = createRegistrar({ config, logger });
  process.on("uncaughtException", (error) => {
    logger.fatal({ err: error }, "uncaught exception");
    process.exit(1);
  });
  process.on("unhandledRejection", (reason) => {
    logger.error({ err: reason }, "unhandled rejection (ignored)");
  });
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
  await new Promise<void>((resolve) => {
    const stop = (signal: NodeJS.Signals) => {
      logger.info({ signal }, "draining");
      resolve();
    };
    process.once("SIGTERM", stop);
    process.once("SIGINT", stop);
  });
  await registrar.stop();
  return 0;
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    process.stderr.write(
      `aether-registrar: ${error instanceof Error ? error.message : String(error)}\n`,
    );
    process.exitCode = 1;
  },
);
