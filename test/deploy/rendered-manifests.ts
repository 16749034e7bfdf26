/**
 * Renders kustomizations with `kubectl kustomize` and answers questions about
 * the result: workloads and their containers, a container's arguments as the
 * kubelet would expand them (env from rendered ConfigMaps, `$(VAR)`), flags.
 */
import { execFile, spawnSync } from "node:child_process";
import { resolve } from "node:path";
import { promisify } from "node:util";
import { parseAllDocuments } from "yaml";

const execFileAsync = promisify(execFile);

/** The repository root. */
export const ROOT = resolve(import.meta.dirname, "../..");

/** True when `kubectl` runs here. */
export const hasKubectl: boolean =
  spawnSync("kubectl", ["version", "--client"], { stdio: "ignore" }).status === 0;

/** A rendered Kubernetes object (only the fields the tests read are typed). */
export interface KubeObject {
  readonly apiVersion: string;
  readonly kind: string;
  readonly metadata: {
    readonly name: string;
    readonly namespace?: string;
    readonly labels?: Readonly<Record<string, string>>;
  };
  readonly [field: string]: unknown;
}

/** A container of a pod template. */
export interface Container {
  readonly name: string;
  readonly image?: string;
  /** `Always` on an init container makes it a native sidecar (Kubernetes 1.29+). */
  readonly restartPolicy?: string;
  readonly command?: readonly string[];
  readonly args?: readonly string[];
  readonly env?: readonly {
    readonly name: string;
    readonly value?: string;
    readonly valueFrom?: {
      readonly configMapKeyRef?: {
        readonly name: string;
        readonly key: string;
        readonly optional?: boolean;
      };
    };
  }[];
  readonly securityContext?: SecurityContext;
  readonly resources?: {
    readonly requests?: Readonly<Record<string, string>>;
    readonly limits?: Readonly<Record<string, string>>;
  };
  readonly livenessProbe?: Probe;
  readonly readinessProbe?: Probe;
  readonly startupProbe?: Probe;
  readonly ports?: readonly { readonly name?: string; readonly containerPort: number }[];
  readonly volumeMounts?: readonly {
    readonly name: string;
    readonly mountPath: string;
    readonly readOnly?: boolean;
    /** One file of the volume: the kubelet never updates it after the pod starts. */
    readonly subPath?: string;
  }[];
}

/** The parts of a (pod or container) security context the tests check. */
export interface SecurityContext {
  readonly runAsNonRoot?: boolean;
  readonly runAsUser?: number;
  readonly readOnlyRootFilesystem?: boolean;
  readonly allowPrivilegeEscalation?: boolean;
  readonly privileged?: boolean;
  readonly capabilities?: { readonly drop?: readonly string[]; readonly add?: readonly string[] };
  readonly seccompProfile?: { readonly type: string };
}

/** An HTTP probe. */
export interface Probe {
  readonly httpGet?: {
    readonly path: string;
    readonly port: string | number;
    readonly scheme?: string;
  };
}

/** A pod spec. */
export interface PodSpec {
  readonly serviceAccountName?: string;
  readonly automountServiceAccountToken?: boolean;
  readonly terminationGracePeriodSeconds?: number;
  readonly hostNetwork?: boolean;
  readonly securityContext?: SecurityContext;
  readonly containers: readonly Container[];
  readonly initContainers?: readonly Container[];
  readonly volumes?: readonly {
    readonly name: string;
    readonly emptyDir?: unknown;
    readonly hostPath?: unknown;
    readonly configMap?: {
      readonly name: string;
      readonly optional?: boolean;
      readonly items?: readonly unknown[];
    };
    readonly secret?: {
      readonly secretName: string;
      readonly optional?: boolean;
      readonly defaultMode?: number;
      readonly items?: readonly unknown[];
    };
    readonly csi?: {
      readonly driver: string;
      readonly readOnly?: boolean;
      readonly volumeAttributes?: Readonly<Record<string, string>>;
    };
  }[];
}

/** A Deployment, DaemonSet or StatefulSet. */
export interface Workload {
  readonly object: KubeObject;
  readonly replicas: number | undefined;
  readonly podLabels: Readonly<Record<string, string>>;
  readonly pod: PodSpec;
}

/** Renders `dir` (relative to the repository root) and parses every document. */
export async function render(dir: string): Promise<KubeObject[]> {
  const { stdout } = await execFileAsync("kubectl", ["kustomize", dir], {
    cwd: ROOT,
    maxBuffer: 16 * 1024 * 1024,
  });
  return parseAllDocuments(stdout).map((document) => {
    if (document.errors.length > 0) {
      throw new Error(`${dir}: ${document.errors.map((e) => e.message).join("; ")}`);
    }
    return document.toJS() as KubeObject;
  });
}

/** The objects of `kind`. */
export function ofKind(objects: readonly KubeObject[], kind: string): KubeObject[] {
  return objects.filter((o) => o.kind === kind);
}

/** The one object of `kind` named `name`; throws when absent. */
export function find(objects: readonly KubeObject[], kind: string, name: string): KubeObject {
  const found = objects.find((o) => o.kind === kind && o.metadata.name === name);
  if (found === undefined) throw new Error(`no ${kind} ${name} in the rendering`);
  return found;
}

/** The Deployments, DaemonSets and StatefulSets, with their pod templates. */
export function workloads(objects: readonly KubeObject[]): Workload[] {
  return objects
    .filter((o) => ["Deployment", "DaemonSet", "StatefulSet"].includes(o.kind))
    .map((object) => {
      const spec = object.spec as {
        replicas?: number;
        template: { metadata: { labels?: Record<string, string> }; spec: PodSpec };
      };
      return {
        object,
        replicas: spec.replicas,
        podLabels: spec.template.metadata.labels ?? {},
        pod: spec.template.spec,
      };
    });
}

/** The workload of `kind` named `name`; throws when absent. */
export function workload(objects: readonly KubeObject[], kind: string, name: string): Workload {
  const found = workloads(objects).find(
    (w) => w.object.kind === kind && w.object.metadata.name === name,
  );
  if (found === undefined) throw new Error(`no ${kind} ${name} in the rendering`);
  return found;
}

/** Every container of a pod, init containers included. */
export function allContainers(pod: PodSpec): Container[] {
  return [...(pod.initContainers ?? []), ...pod.containers];
}

/**
 * The container's environment as the kubelet resolves it: literal values and
 * keys of ConfigMaps in the rendering. A variable from a ConfigMap that is not
 * rendered (one the operator provides) takes its value from `provided`, or is
 * left out; a missing key of a rendered ConfigMap throws (the pod would not
 * start).
 */
export function containerEnv(
  container: Container,
  objects: readonly KubeObject[],
  provided: ReadonlyMap<string, string> = new Map(),
): Map<string, string> {
  const env = new Map<string, string>();
  for (const variable of container.env ?? []) {
    if (variable.value !== undefined) {
      env.set(variable.name, variable.value);
      continue;
    }
    const ref = variable.valueFrom?.configMapKeyRef;
    if (ref === undefined) continue;
    const configMap = objects.find((o) => o.kind === "ConfigMap" && o.metadata.name === ref.name);
    if (configMap === undefined) {
      const given = provided.get(variable.name);
      if (given !== undefined) env.set(variable.name, given);
      continue;
    }
    const value = (configMap.data as Record<string, string> | undefined)?.[ref.key];
    if (value === undefined) {
      if (ref.optional === true) continue;
      throw new Error(`${container.name}: ConfigMap ${ref.name} has no key ${ref.key}`);
    }
    env.set(variable.name, value);
  }
  return env;
}

/**
 * The container's args with `$(VAR)` expanded from {@link containerEnv} the
 * way Kubernetes does (`$$` escapes; an unknown variable stays as written).
 * `provided` stands in for what the operator's own ConfigMaps would give.
 */
export function effectiveArgs(
  container: Container,
  objects: readonly KubeObject[],
  provided: ReadonlyMap<string, string> = new Map(),
): string[] {
  const env = containerEnv(container, objects, provided);
  return (container.args ?? []).map((arg) =>
    arg.replace(/\$\$|\$\(([A-Za-z_][A-Za-z0-9_]*)\)/g, (all, name: string | undefined) =>
      name === undefined ? "$" : (env.get(name) ?? all),
    ),
  );
}

/** The values given to `--flag` (as `--flag=value` or `--flag value`). */
export function flagValues(args: readonly string[], flag: string): string[] {
  const values: string[] = [];
  args.forEach((arg, index) => {
    if (arg.startsWith(`--${flag}=`)) values.push(arg.slice(flag.length + 3));
    else if (arg === `--${flag}` && index + 1 < args.length) values.push(args[index + 1] as string);
  });
  return values;
}

/** The single value of `--flag`; throws unless it is given exactly once. */
export function flagValue(args: readonly string[], flag: string): string {
  const values = flagValues(args, flag);
  if (values.length !== 1) {
    throw new Error(`--${flag} is given ${values.length} times in ${args.join(" ")}`);
  }
  return values[0] as string;
}

/** Parses a Go duration like `10s` or `1m30s` into seconds. */
export function durationSeconds(text: string): number {
  const units: Record<string, number> = { ms: 0.001, s: 1, m: 60, h: 3600 };
  let total = 0;
  let rest = text;
  while (rest !== "") {
    const match = /^(\d+(?:\.\d+)?)(ms|s|m|h)/.exec(rest);
    if (match === null) throw new Error(`cannot read the duration ${text}`);
    total += Number(match[1]) * (units[match[2] as string] as number);
    rest = rest.slice(match[0].length);
  }
  return total;
}
