/**
 * `aether-agent`: parses flags, starts the agent, and stops it cleanly on
 * SIGTERM or SIGINT (exit 0). Everything else is in `agent.ts`.
 */
import {
  installCrashHandlers,
  parseCommandLine,
  runMain,
} from "../../services/process/command-line.js";
import { createLogger, type Logger } from "../../services/runtime/logger.js";
import { createDirSource } from "../../services/sources/dir-source.js";
import { createKubernetesSource } from "../../services/sources/kubernetes-source.js";
import type { ObjectSource } from "../../services/sources/object-source.js";
import { createAgent } from "./agent.js";
import { AGENT_USAGE, type AgentConfig, parseAgentFlags } from "./agent-flags.js";

/** Creates the local route source the flags name, or undefined. */
function createLocalSource(config: AgentConfig, logger: Logger): ObjectSource | undefined {
  const spec = config.localSource;
  if (spec === undefined) return undefined;
  const sourceLogger = logger.child({ part: "local-source" });
  if (spec.kind === "dir") return createDirSource({ path: spec.path, logger: sourceLogger });
  return createKubernetesSource({
    ...(config.kubeconfig === undefined ? {} : { kubeconfig: config.kubeconfig }),
    logger: sourceLogger,
  });
}

async function main(argv: readonly string[]): Promise<number> {
  const commandLine = parseCommandLine("aether-agent", AGENT_USAGE, () => parseAgentFlags(argv));
  if ("exitCode" in commandLine) return commandLine.exitCode;
  const config = commandLine.config;
  const logger = createLogger({
    level: config.logLevel,
    base: { component: "agent", cluster: config.cluster },
  });
  installCrashHandlers(logger);
  const agent = createAgent({
    ...config,
    localSource: createLocalSource(config, logger),
    logger,
    processMetrics: true,
  });
  const signalled = new Promise<NodeJS.Signals>((resolve) => {
    process.once("SIGTERM", resolve);
    process.once("SIGINT", resolve);
  });
  try {
    await agent.start();
  } catch (error) {
    logger.error({ err: error }, "cannot start; stopping");
    await agent.stop();
    return 1;
  }
  const signal = await signalled;
  logger.info({ signal }, "stopping");
  await agent.stop();
  return 0;
}

runMain("aether-agent", main);
