/**
 * An agent's name in its registrar's table of reporting agents
 * (`ReportAppliedConfigRequest.agent_id`): by default the node name. Pure.
 */

const AGENT_ID = /^[A-Za-z0-9._-]{1,253}$/;

/**
 * Checks an agent name: 1 to 253 characters of `[A-Za-z0-9._-]`. Returns
 * undefined when it is valid, otherwise a sentence saying what is wrong.
 */
export function checkAgentId(value: string): string | undefined {
  if (AGENT_ID.test(value)) return undefined;
  return `agent id ${JSON.stringify(value.slice(0, 253))} is not 1 to 253 characters of [A-Za-z0-9._-]`;
}

/** Where an agent's default name comes from. */
export interface AgentIdSources {
  /** The node name (`NODE_NAME`, from the Downward API); empty or undefined when unset. */
  readonly nodeName: string | undefined;
  /** The host name. */
  readonly hostname: string;
}

/** The default agent name: the node name when set, else the host name (unchecked). */
export function defaultAgentId(sources: AgentIdSources): string {
  const nodeName = sources.nodeName?.trim() ?? "";
  return nodeName === "" ? sources.hostname : nodeName;
}
