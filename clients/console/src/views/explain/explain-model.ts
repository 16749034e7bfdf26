/**
 * The Explain form's model, pure: the form's fields, their place in the
 * URL's query (`#/explain?method=GET&url=…` so a decision can be linked),
 * and the target they ask about, parsed by the same code as `aetherctl
 * explain` (`services/common/explain-target.ts`), with the random source
 * (`seed`: aetherctl's `--seed-random`; empty: its default constant 0).
 */
import {
  buildExplainTarget,
  type ExplainField,
  ExplainInputError,
  type ExplainTarget,
} from "../../../../../services/common/explain-target.js";
import { mulberry32 } from "../../../../../services/common/mulberry32.js";
import { viewConflict } from "./explain-agent.js";

/** One header row of the form. */
export interface HeaderRow {
  readonly name: string;
  readonly value: string;
}

/** The Explain form's fields, as typed (strings; validated by {@link formTarget}). */
export interface ExplainForm {
  /** The HTTP method (ignored for gRPC: POST). */
  readonly method: string;
  /** The URL, `http://checkout.shop:8080/cart` (scheme optional). */
  readonly url: string;
  /** The header rows, in order (rows with an empty name are left out). */
  readonly headers: readonly HeaderRow[];
  /** The caller's namespace. */
  readonly from: string;
  /** The service port, when not the URL's. */
  readonly port: string;
  /** `pkg.Service/Method` for a gRPC call; empty for HTTP. */
  readonly grpc: string;
  /** The origin cluster whose projections to use; empty: the effective view. */
  readonly origin: string;
  /** The agent whose route table to use (a name of the dashboard's `/agents`); empty: none. */
  readonly agent: string;
  /** The seed of the weighted pick (mulberry32); empty: the constant 0. */
  readonly seed: string;
}

/** The empty form (GET, no URL, caller namespace `default`). */
export const EMPTY_FORM: ExplainForm = {
  method: "GET",
  url: "",
  headers: [],
  from: "default",
  port: "",
  grpc: "",
  origin: "",
  agent: "",
  seed: "",
};

const FIELDS = ["method", "url", "from", "port", "grpc", "origin", "agent", "seed"] as const;

/**
 * The form a route's query holds; missing keys take {@link EMPTY_FORM}'s
 * values. Headers are the `headers` key, one `name: value` per line.
 */
export function formFromQuery(query: ReadonlyMap<string, string>): ExplainForm {
  const fields = Object.fromEntries(FIELDS.map((key) => [key, query.get(key) ?? EMPTY_FORM[key]]));
  const headers = (query.get("headers") ?? "")
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((line) => {
      const colon = line.indexOf(":");
      return colon < 0
        ? { name: line.trim(), value: "" }
        : { name: line.slice(0, colon).trim(), value: line.slice(colon + 1).trim() };
    });
  return { ...EMPTY_FORM, ...fields, headers };
}

/**
 * The query pairs of a form (the inverse of {@link formFromQuery}); the
 * shell's `formatRoute` leaves out the empty ones.
 */
export function formToQuery(form: ExplainForm): [string, string][] {
  const headers = form.headers
    .filter((row) => row.name.trim() !== "")
    .map((row) => `${row.name.trim()}: ${row.value.trim()}`)
    .join("\n");
  return [...FIELDS.map((key): [string, string] => [key, form[key]]), ["headers", headers]];
}

/** The form's field for each argument the parser can refuse. */
const FORM_FIELD: Record<ExplainField, keyof ExplainForm> = {
  method: "method",
  url: "url",
  headers: "headers",
  namespace: "from",
  port: "port",
  grpc: "grpc",
};

/** What a form asks: the target and the random source, or why it cannot be asked. */
export type FormRequest =
  | {
      readonly ok: true;
      readonly target: ExplainTarget;
      /** A fresh random source (call once per evaluation). */
      readonly random: () => () => number;
    }
  | {
      readonly ok: false;
      readonly error: string;
      /** The field the problem is about (its control is marked invalid). */
      readonly field: keyof ExplainForm;
    };

/**
 * The target a form asks about, parsed as `aetherctl explain --from-namespace
 * FROM [--port P] [--grpc S/M] [-H …] METHOD URL` would be, or the parser's
 * message when the form cannot be asked (an empty URL, a bad seed, both an
 * origin and an agent too).
 */
export function formTarget(form: ExplainForm): FormRequest {
  if (form.url.trim() === "")
    return { ok: false, error: "enter the URL of the request", field: "url" };
  const conflict = viewConflict(form);
  if (conflict !== undefined) return { ok: false, error: conflict, field: "agent" };
  const seed = form.seed.trim();
  if (seed !== "" && !(/^\d{1,10}$/.test(seed) && Number(seed) <= 0xffffffff)) {
    return {
      ok: false,
      error: `seed ${JSON.stringify(seed)} must be a whole number from 0 to 4294967295`,
      field: "seed",
    };
  }
  const grpc = form.grpc.trim();
  try {
    const target = buildExplainTarget({
      positionals: grpc === "" ? [form.method.trim(), form.url.trim()] : [form.url.trim()],
      fromNamespace: form.from.trim(),
      port: form.port.trim() === "" ? undefined : form.port.trim(),
      portName: undefined,
      headers: form.headers
        .filter((row) => row.name.trim() !== "")
        .map((row) => `${row.name}: ${row.value}`),
      grpc: grpc === "" ? undefined : grpc,
    });
    const random = seed === "" ? () => () => 0 : () => mulberry32(Number(seed));
    return { ok: true, target, random };
  } catch (error) {
    if (error instanceof ExplainInputError)
      return { ok: false, error: error.message, field: FORM_FIELD[error.field] };
    throw error;
  }
}

/** How the form's random source is named: `seed 42` or `constant 0` (aetherctl's words). */
export function randomDescription(form: ExplainForm): string {
  return form.seed.trim() === "" ? "constant 0" : `seeded ${form.seed.trim()}`;
}
