/**
 * The sandbox's printed commands (`sandbox-commands.ts`), table-driven:
 * with TLS, `. operator.env` and aetherctl without TLS flags, buf curl and
 * curl with the operator's certificate flags; the flags on aetherctl when
 * there is no environment file; none and h2c with `--plaintext`; paths
 * relative to the working directory when under it, and a path with a space
 * quoted as one shell word.
 */
import { describe, expect, it } from "vitest";
import type { SandboxInfo } from "../../services/sandbox/sandbox.js";
import { sandboxCommands } from "../../services/sandbox/sandbox-commands.js";
import type { SandboxPki } from "../../services/sandbox/sandbox-pki.js";

const spoke = {
  cluster: "east",
  role: "spoke" as const,
  url: "https://127.0.0.1:8081",
  adminUrl: "http://127.0.0.1:8181",
};

function pkiAt(dir: string): SandboxPki {
  const svid = (name: string) => ({ cert: `${dir}/${name}.crt`, key: `${dir}/${name}.key` });
  return {
    dir,
    bundles: new Map([["east", `${dir}/east.mesh.pem`]]),
    caBundle: `${dir}/ca-bundle.pem`,
    svids: new Map([["operator", svid("operator")]]),
    operator: svid("operator"),
    reused: true,
  };
}

const info = (pki: SandboxPki | undefined, envFile = true) =>
  ({
    pki,
    operatorEnv:
      pki === undefined
        ? undefined
        : envFile
          ? { file: `${pki.dir}/operator.env` }
          : { file: `${pki.dir}/operator.env`, problem: "a comma" },
  }) as unknown as SandboxInfo;

describe("the sandbox's printed commands", () => {
  it("load the operator's environment file once for aetherctl, and give buf curl and curl the certificate flags, relative to the working directory", () => {
    const commands = sandboxCommands(info(pkiAt("/repo/.sandbox/pki")), spoke, "/repo");
    expect(commands.source).toBe(". .sandbox/pki/operator.env");
    expect(commands.aetherctl).toBe("npm run aetherctl -- --registrar https://127.0.0.1:8081");
    const certs =
      "--cacert .sandbox/pki/ca-bundle.pem --cert .sandbox/pki/operator.crt --key .sandbox/pki/operator.key";
    expect(commands.buf[0]).toBe(
      `npx buf curl --protocol grpc ${certs} --list-methods https://127.0.0.1:8081`,
    );
    expect(commands.curl).toMatch(new RegExp(`^curl -s ${certs} https://127\\.0\\.0\\.1:8081/`));
    expect(commands.readyz).toBe("curl -s http://127.0.0.1:8181/readyz");
  });

  it.each([
    ["/repo/pki", "/repo", ". pki/operator.env"],
    ["/repo", "/repo", ". ./operator.env"],
    ["/my pki", "/repo", ". '/my pki/operator.env'"],
  ])("load an environment file in %s from %s as %s", (dir, cwd, line) => {
    expect(sandboxCommands(info(pkiAt(dir)), spoke, cwd).source).toBe(line);
  });

  it("give aetherctl the operator's TLS flags when there is no environment file", () => {
    const commands = sandboxCommands(info(pkiAt("/repo/.sandbox/pki"), false), spoke, "/repo");
    expect(commands.source).toBeUndefined();
    expect(commands.aetherctl).toBe(
      "npm run aetherctl -- --registrar https://127.0.0.1:8081 --tls-cert-file .sandbox/pki/operator.crt --tls-key-file .sandbox/pki/operator.key --trust-domain-bundle east.mesh=.sandbox/pki/east.mesh.pem",
    );
  });

  it("quote a path with a space as one shell word, and keep paths outside the working directory absolute", () => {
    const commands = sandboxCommands(info(pkiAt("/my pki"), false), spoke, "/repo");
    expect(commands.aetherctl).toContain("--tls-cert-file '/my pki/operator.crt'");
    expect(commands.aetherctl).toContain("--trust-domain-bundle east.mesh='/my pki/east.mesh.pem'");
  });

  it("use plain HTTP, h2c and no certificate flags with --plaintext", () => {
    const plain = { ...spoke, url: "http://127.0.0.1:8081" };
    const commands = sandboxCommands(info(undefined), plain, "/repo");
    expect(commands.source).toBeUndefined();
    expect(commands.aetherctl).toBe("npm run aetherctl -- --registrar http://127.0.0.1:8081");
    expect(commands.buf[0]).toBe(
      "npx buf curl --protocol grpc --http2-prior-knowledge --list-methods http://127.0.0.1:8081",
    );
    expect(commands.curl).not.toContain("--cert");
  });
});
