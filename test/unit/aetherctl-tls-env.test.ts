/**
 * aetherctl's environment defaults of the TLS flags, through the real
 * parser: what each combination of variables and flags gives (a flag wins;
 * the certificate and key as a pair; every bundle from one list; nothing
 * for an http:// registrar), and each usage error naming the variable its
 * bad value came from.
 */
import { describe, expect, it } from "vitest";
import {
  AETHERCTL_USAGE,
  COMMAND_USAGE,
  parseAetherctlFlags,
} from "../../clients/aetherctl/aetherctl-flags.js";
import { UsageError } from "../../services/process/usage-error.js";

const ID = "spiffe://hub.mesh/ns/aether-system/sa/aether-registrar";
/** A pod's environment as deploy/components/mtls sets it. */
const POD = {
  AETHER_REGISTRAR: "https://127.0.0.1:8080",
  AETHER_TLS_CERT_FILE: "/run/svid/tls.crt",
  AETHER_TLS_KEY_FILE: "/run/svid/tls.key",
  AETHER_TRUST_DOMAIN_BUNDLE: "hub.mesh=/run/svid/ca.crt",
  AETHER_REGISTRAR_SPIFFE_ID: ID,
};

function tlsOf(argv: string[], env: NodeJS.ProcessEnv) {
  const line = parseAetherctlFlags([...argv, "status"], env);
  if (line.kind !== "run") throw new Error("expected a command");
  return line.global.tls;
}

describe("aetherctl's TLS defaults from the environment", () => {
  it.each([
    {
      name: "a pod's variables alone",
      argv: [],
      env: POD,
      want: {
        certFile: "/run/svid/tls.crt",
        keyFile: "/run/svid/tls.key",
        bundleFiles: new Map([["hub.mesh", "/run/svid/ca.crt"]]),
        registrarSpiffeId: ID,
      },
    },
    {
      name: "the pair from the flags (the variables' pair left out); the rest from the variables",
      argv: ["--tls-cert-file", "c.pem", "--tls-key-file", "k.pem"],
      env: POD,
      want: {
        certFile: "c.pem",
        keyFile: "k.pem",
        bundleFiles: new Map([["hub.mesh", "/run/svid/ca.crt"]]),
        registrarSpiffeId: ID,
      },
    },
    {
      name: "--trust-domain-bundle replaces the whole list; --registrar-spiffe-id the ID",
      argv: [
        ...["--trust-domain-bundle", "east.mesh=e.pem"],
        ...["--registrar-spiffe-id", "spiffe://east.mesh/r"],
      ],
      env: POD,
      want: {
        certFile: "/run/svid/tls.crt",
        keyFile: "/run/svid/tls.key",
        bundleFiles: new Map([["east.mesh", "e.pem"]]),
        registrarSpiffeId: "spiffe://east.mesh/r",
      },
    },
    {
      name: "a list of bundles, spaces and empty items ignored; an empty variable is unset",
      argv: [],
      env: {
        ...POD,
        AETHER_TRUST_DOMAIN_BUNDLE: " hub.mesh=/b/hub.json, ,spiffe://east.mesh=/b/east.pem,",
        AETHER_REGISTRAR_SPIFFE_ID: "",
        AETHER_TLS_CERT_FILE: "",
        AETHER_TLS_KEY_FILE: "",
      },
      want: {
        bundleFiles: new Map([
          ["hub.mesh", "/b/hub.json"],
          ["east.mesh", "/b/east.pem"],
        ]),
      },
    },
    {
      name: "an http:// registrar leaves the TLS variables out",
      argv: ["--registrar", "http://127.0.0.1:8080"],
      env: POD,
      want: undefined,
    },
  ])("$name", ({ argv, env, want }) => {
    expect(tlsOf(argv, env)).toEqual(want);
  });

  it.each([
    {
      env: { ...POD, AETHER_TRUST_DOMAIN_BUNDLE: "hub.mesh" },
      message: '$AETHER_TRUST_DOMAIN_BUNDLE "hub.mesh" is not TRUST_DOMAIN=PATH',
    },
    {
      env: { ...POD, AETHER_TRUST_DOMAIN_BUNDLE: "hub.mesh=/a,hub.mesh=/b" },
      message: "$AETHER_TRUST_DOMAIN_BUNDLE names trust domain hub.mesh twice",
    },
    {
      env: { ...POD, AETHER_TRUST_DOMAIN_BUNDLE: "Hub_Mesh=/a" },
      message: '$AETHER_TRUST_DOMAIN_BUNDLE "Hub_Mesh=/a": ',
    },
    {
      env: { ...POD, AETHER_REGISTRAR_SPIFFE_ID: "spiffe://hub.mesh" },
      message: '$AETHER_REGISTRAR_SPIFFE_ID "spiffe://hub.mesh" names a trust domain',
    },
    {
      env: { ...POD, AETHER_REGISTRAR_SPIFFE_ID: "https://x" },
      message: "$AETHER_REGISTRAR_SPIFFE_ID: ",
    },
    {
      env: { ...POD, AETHER_TRUST_DOMAIN_BUNDLE: "east.mesh=/e.pem" },
      message: `$AETHER_REGISTRAR_SPIFFE_ID ${ID}: no $AETHER_TRUST_DOMAIN_BUNDLE for its trust domain hub.mesh`,
    },
    {
      env: { ...POD, AETHER_TLS_KEY_FILE: "" },
      message: "$AETHER_TLS_CERT_FILE and $AETHER_TLS_KEY_FILE go together",
    },
    {
      env: { ...POD, AETHER_REGISTRAR: "nope" },
      message: '$AETHER_REGISTRAR "nope" is not an http(s) URL',
    },
  ])("names the variable: $message", ({ env, message }) => {
    expect(() => tlsOf([], env)).toThrow(UsageError);
    expect(() => tlsOf([], env)).toThrow(message);
  });

  it("names the flag when the bad value came from the command line", () => {
    expect(() => tlsOf(["--trust-domain-bundle", "hub.mesh"], POD)).toThrow(
      '--trust-domain-bundle "hub.mesh" is not TRUST_DOMAIN=PATH',
    );
    expect(() => tlsOf(["--registrar-spiffe-id", "spiffe://hub.mesh"], POD)).toThrow(
      '--registrar-spiffe-id "spiffe://hub.mesh" names a trust domain',
    );
    expect(() => tlsOf(["--tls-cert-file", "c.pem"], POD)).toThrow(
      "--tls-cert-file and --tls-key-file go together",
    );
    expect(() => tlsOf(["--registrar", "nope"], POD)).toThrow('--registrar "nope" is not');
  });

  it("documents every variable in the general and each command's --help", () => {
    for (const text of [AETHERCTL_USAGE, ...Object.values(COMMAND_USAGE)]) {
      for (const variable of Object.keys(POD)) expect(text).toContain(`  ${variable} `);
    }
  });
});
