/**
 * The aether workloads of a rendering as their programs would start: the
 * registrar's and the agent's container, its args as the kubelet expands
 * them, and what the real flag parsers make of those args. The registrar's
 * parser reads some files at once (the page-token key, the signing key, the
 * origin keys): the tests point those flags at files they made.
 */
import { type AgentConfig, parseAgentFlags } from "../../clients/agent/agent-flags.js";
import {
  parseRegistrarFlags,
  type RegistrarConfig,
} from "../../services/registrar/registrar-flags.js";
import { type Container, effectiveArgs, type KubeObject, workload } from "./rendered-manifests.js";

/** `args` with each `--FLAG=…` whose FLAG is a key of `files` given that file instead. */
export function withFiles(
  args: readonly string[],
  files: Readonly<Record<string, string>>,
): string[] {
  return args.map((arg) => {
    const flag = Object.keys(files).find((f) => arg.startsWith(`--${f}=`));
    return flag === undefined ? arg : `--${flag}=${files[flag]}`;
  });
}

/**
 * The registrar Deployment of `objects`, its container, its effective args
 * (`provided` stands in for the operator's ConfigMaps), and
 * parseRegistrarFlags's config of those args with `files` in place.
 */
export function parsedRegistrar(
  objects: readonly KubeObject[],
  files: Readonly<Record<string, string>>,
  provided: ReadonlyMap<string, string>,
) {
  const w = workload(objects, "Deployment", "aether-registrar");
  const container = w.pod.containers[0] as Container;
  const args = effectiveArgs(container, objects, provided);
  const config = parseRegistrarFlags(withFiles(args, files)) as RegistrarConfig;
  return { objects, w, container, args, config };
}

/** The agent DaemonSet of `objects`, its container, its effective args and parseAgentFlags's config. */
export function parsedAgent(objects: readonly KubeObject[]) {
  const w = workload(objects, "DaemonSet", "aether-agent");
  const container = w.pod.containers[0] as Container;
  const args = effectiveArgs(container, objects);
  return { objects, w, container, args, config: parseAgentFlags(args) as AgentConfig };
}
