/**
 * `aetherctl dashboard --open`: opens a URL in the default browser with the
 * platform's opener (`open` on macOS, `start` through `cmd` on Windows,
 * `xdg-open` elsewhere), best effort: it never throws, and resolves with the
 * problem's description when the opener could not be started or failed.
 */
import { spawn } from "node:child_process";

/** Opens `url`; resolves undefined when done, or a one-line problem. Never rejects. */
export type BrowserOpener = (url: string) => Promise<string | undefined>;

/** The opener's command line on `platform` (Node's `process.platform`). */
export function openerCommand(platform: string, url: string): [string, string[]] {
  if (platform === "darwin") return ["open", [url]];
  // `start`'s first quoted argument is the window title.
  if (platform === "win32") return ["cmd", ["/c", "start", '""', url]];
  return ["xdg-open", [url]];
}

/** The platform's opener, run detached with its output ignored. */
export const openInBrowser: BrowserOpener = (url) =>
  new Promise((resolve) => {
    const [command, args] = openerCommand(process.platform, url);
    try {
      const child = spawn(command, args, { stdio: "ignore", detached: true });
      child.once("error", (error) => resolve(`${command}: ${error.message}`));
      child.once("exit", (code) => resolve(code === 0 ? undefined : `${command} exited ${code}`));
      child.unref();
    } catch (error) {
      resolve(`${command}: ${(error as Error).message}`);
    }
  });
