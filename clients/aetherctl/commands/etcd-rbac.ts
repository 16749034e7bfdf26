/**
 * `aetherctl etcd-rbac`: prints the etcdctl commands that create each
 * cluster's etcd role and user, or with `--apply` creates them in etcd
 * (reporting one line per change). It needs no registrar, so it runs before
 * aetherctl's registrar client is made.
 */
import { UsageError } from "../../../services/process/usage-error.js";
import { readEtcdSecurity } from "../../../services/runtime/etcd-security.js";
import { applyEtcdRbac } from "../etcd-rbac-apply.js";
import { ETCD_RBAC_USAGE, parseEtcdRbacFlags } from "../etcd-rbac-flags.js";
import { formatEtcdRbacScript, planEtcdRbac } from "../etcd-rbac-plan.js";

/** Where the command writes. */
export interface EtcdRbacIo {
  /** Writes to standard output. */
  readonly stdout: (text: string) => void;
  /** Writes to standard error. */
  readonly stderr: (text: string) => void;
}

/**
 * Runs an `aetherctl etcd-rbac` command line (the command word included);
 * resolves with the exit code: 0 done, 1 etcd refused or could not be
 * reached (one line on stderr naming etcd's error), 2 bad usage (the message
 * and the usage on stderr).
 */
export async function runEtcdRbac(argv: readonly string[], io: EtcdRbacIo): Promise<number> {
  let line: ReturnType<typeof parseEtcdRbacFlags>;
  try {
    line = parseEtcdRbacFlags(argv);
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    io.stderr(`aetherctl: ${error.message}\n\n${ETCD_RBAC_USAGE}`);
    return 2;
  }
  if (line.kind === "help") {
    io.stdout(ETCD_RBAC_USAGE);
    return 0;
  }
  const plan = planEtcdRbac(line.prefix, line.clusters);
  const apply = line.apply;
  if (apply === undefined) {
    io.stdout(formatEtcdRbacScript(line.prefix, plan));
    return 0;
  }
  try {
    await applyEtcdRbac(
      {
        endpoints: apply.endpoints,
        security: readEtcdSecurity(apply.securityFiles),
        timeoutMs: apply.timeoutMs,
      },
      plan,
      (text) => io.stdout(`${text}\n`),
    );
  } catch (error) {
    io.stderr(`aetherctl: etcd-rbac --apply failed: ${(error as Error).message}\n`);
    return 1;
  }
  return 0;
}
