/**
 * A network namespace of a test (needs root): `aether-<pid>-<tag>`, joined
 * to the root namespace by a veth pair addressed from a private /30
 * (10.213.<n>.1 in the root namespace, 10.213.<n>.2 inside), a way to cut
 * and heal the link so that packets are dropped (connections hang rather
 * than fail), and a TCP forwarder so a process inside can reach a service
 * that listens on 127.0.0.1 of the root namespace (etcd).
 */
import { execFile, execFileSync } from "node:child_process";
import { createServer, type Server, type Socket, connect as tcpConnect } from "node:net";
import { promisify } from "node:util";

const run = promisify(execFile);

/** Runs `ip ...args` and resolves with its stdout; rejects with its stderr. */
async function ip(...args: string[]): Promise<string> {
  try {
    return (await run("ip", args)).stdout;
  } catch (error) {
    const e = error as { stderr?: string; message: string };
    throw new Error(`ip ${args.join(" ")} failed: ${e.stderr?.trim() || e.message}`);
  }
}

/** A network namespace joined to the root namespace by a veth pair. */
export interface Netns {
  /** Its name, for example `aether-1234-b`. */
  readonly name: string;
  /** The veth end in the root namespace. */
  readonly rootIf: string;
  /** The veth end inside the namespace. */
  readonly nsIf: string;
  /** The root end's address, for example `10.213.7.1`. */
  readonly hostAddr: string;
  /** The namespace end's address, for example `10.213.7.2`. */
  readonly nsAddr: string;
  /** `["ip", "netns", "exec", name]`: a command prefix that runs a program inside. */
  readonly exec: readonly string[];
  /**
   * Cuts the link: the namespace end goes down, so the root end loses its
   * carrier and drops what it sends, and nothing leaves the namespace.
   */
  cut(): Promise<void>;
  /** Heals a {@link Netns.cut}. */
  heal(): Promise<void>;
  /** Deletes the namespace (the veth pair goes with it). Idempotent. */
  remove(): Promise<void>;
}

/** Names of namespaces this process created and has not removed yet. */
const created = new Set<string>();
let exitHookInstalled = false;

/** Removes every namespace this process created when it exits, even after a failed test. */
function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.once("exit", () => {
    for (const name of created) {
      try {
        execFileSync("ip", ["netns", "del", name], { stdio: "ignore" });
      } catch {
        // already gone
      }
    }
  });
}

/** Whether process `pid` is alive. */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** Deletes `aether-<pid>-*` namespaces left by test processes that are gone. */
async function removeStale(): Promise<void> {
  const list = await ip("netns", "list");
  for (const line of list.split("\n")) {
    const match = /^(aether-(\d+)-\S+)/.exec(line.trim());
    if (match !== null && !alive(Number(match[2]))) {
      await ip("netns", "del", match[1] as string).catch(() => undefined);
    }
  }
}

/** Picks a third octet `n` whose 10.213.n.0/30 no interface or route uses yet. */
async function freeSubnet(): Promise<number> {
  const used = `${await ip("-o", "addr")}\n${await ip("route")}`;
  const start = process.pid % 250;
  for (let i = 0; i < 250; i++) {
    const n = ((start + i) % 250) + 1;
    if (!used.includes(`10.213.${n}.`)) return n;
  }
  throw new Error("no free 10.213.n.0/30 subnet");
}

/**
 * Creates `aether-<pid>-<tag>` with a veth pair, addresses and loopback up.
 * Throws an Error saying what failed (for example when not root); anything
 * half-created is removed first.
 */
export async function createNetns(tag: string): Promise<Netns> {
  installExitHook();
  await removeStale();
  const name = `aether-${process.pid}-${tag}`;
  const rootIf = `ae${process.pid}${tag}r`.slice(-15);
  const nsIf = `ae${process.pid}${tag}n`.slice(-15);
  const n = await freeSubnet();
  const hostAddr = `10.213.${n}.1`;
  const nsAddr = `10.213.${n}.2`;
  const inside = (...args: string[]) => ip("netns", "exec", name, "ip", ...args);
  let removed = false;
  const remove = async () => {
    if (removed) return;
    removed = true;
    await ip("netns", "del", name).catch(() => undefined);
    await ip("link", "del", rootIf).catch(() => undefined); // normally gone with the namespace
    created.delete(name);
  };
  await ip("netns", "add", name);
  created.add(name);
  try {
    await ip("link", "add", rootIf, "type", "veth", "peer", "name", nsIf);
    await ip("link", "set", nsIf, "netns", name);
    await ip("addr", "add", `${hostAddr}/30`, "dev", rootIf);
    await ip("link", "set", rootIf, "up");
    await inside("addr", "add", `${nsAddr}/30`, "dev", nsIf);
    await inside("link", "set", nsIf, "up");
    await inside("link", "set", "lo", "up");
  } catch (error) {
    await remove();
    throw error;
  }
  return {
    name,
    rootIf,
    nsIf,
    hostAddr,
    nsAddr,
    exec: ["ip", "netns", "exec", name],
    cut: async () => {
      await inside("link", "set", nsIf, "down");
    },
    heal: async () => {
      await inside("link", "set", nsIf, "up");
    },
    remove,
  };
}

/** A TCP forwarder started by {@link forwardTcp}. */
export interface TcpForwarder {
  /** `host:port` it listens on. */
  readonly address: string;
  /** Closes the listener and every forwarded connection. */
  close(): Promise<void>;
}

/**
 * Listens on `listenHost` (a free port) and forwards every connection to
 * `target` (`http://host:port` or `host:port`), for example to let a process
 * inside a namespace reach an etcd that listens on 127.0.0.1.
 */
export async function forwardTcp(listenHost: string, target: string): Promise<TcpForwarder> {
  const url = new URL(target.includes("://") ? target : `tcp://${target}`);
  const sockets = new Set<Socket>();
  const track = (socket: Socket) => {
    sockets.add(socket);
    socket.once("close", () => sockets.delete(socket));
  };
  const server: Server = createServer((client) => {
    const upstream = tcpConnect(Number(url.port), url.hostname);
    track(client);
    track(upstream);
    client.on("error", () => upstream.destroy());
    upstream.on("error", () => client.destroy());
    client.pipe(upstream);
    upstream.pipe(client);
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, listenHost, resolve);
  });
  const bound = server.address();
  if (bound === null || typeof bound === "string") throw new Error("no port assigned");
  return {
    address: `${listenHost}:${bound.port}`,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
