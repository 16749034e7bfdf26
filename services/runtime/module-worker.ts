/**
 * Starting a worker thread from a module of this repository, whether it runs
 * compiled (`dist/…/x.js`, the image) or from source (`x.ts` under
 * `node --import tsx` or vitest). Node does not pass `--import tsx` on to a
 * worker (Node 20 ignores it in a worker's `execArgv`), so a source module is
 * started by a one-line bootstrap that registers tsx's loader in the worker
 * first; a compiled one is started as it is.
 */
import { Worker, type WorkerOptions } from "node:worker_threads";

/**
 * The URL of the module `name` (without extension) beside `siblingUrl`, with
 * the extension `siblingUrl` has: `.ts` from source, `.js` compiled.
 */
export function siblingModule(siblingUrl: string, name: string): URL {
  const extension = /\.[cm]?[jt]s$/.exec(new URL(siblingUrl).pathname)?.[0] ?? ".js";
  return new URL(`./${name}${extension}`, siblingUrl);
}

/**
 * Starts a worker running the ES module at `moduleUrl`. A `.ts` module is
 * loaded through tsx (a development dependency: present wherever sources
 * run); anything else directly. `options` are passed on (not `eval`).
 */
export function startModuleWorker(
  moduleUrl: URL,
  options: Omit<WorkerOptions, "eval"> = {},
): Worker {
  if (!moduleUrl.pathname.endsWith(".ts")) return new Worker(moduleUrl, options);
  const tsx = import.meta.resolve("tsx/esm/api");
  const bootstrap =
    `import(${JSON.stringify(tsx)})` +
    `.then((api) => { api.register(); return import(${JSON.stringify(moduleUrl.href)}); })`;
  return new Worker(bootstrap, { ...options, eval: true });
}
