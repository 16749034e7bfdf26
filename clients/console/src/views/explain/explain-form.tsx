/**
 * The Explain form: method, URL, header rows (add, remove), caller
 * namespace, port, gRPC method, the view (effective, one origin, or one
 * agent's route table: a choice shown when the dashboard has agents) and
 * the seed of the weighted pick. Every control is labelled; Enter in any field
 * submits. Controlled: the parent holds the {@link ExplainForm}.
 */
import type { ExplainForm, HeaderRow } from "./explain-model.js";

/** The form's props: its value, its changes, its submission and the origins to offer. */
export interface ExplainFormProps {
  readonly form: ExplainForm;
  readonly onChange: (form: ExplainForm) => void;
  readonly onSubmit: () => void;
  /** Origin clusters to offer for the view (a datalist; any name can be typed). */
  readonly origins: readonly string[];
  /** The agents the dashboard reads route tables from (`GET /agents`); none: no Agent choice. */
  readonly agents: readonly string[];
  /** The field the last problem was about (`headers` for every header row); none when valid. */
  readonly invalid?: string | undefined;
  /** The id of the element that says the problem. */
  readonly errorId: string;
}

type TextField = "method" | "url" | "from" | "port" | "grpc" | "origin" | "seed";

const FIELDS: readonly { key: TextField; label: string; placeholder: string; wide?: boolean }[] = [
  { key: "method", label: "Method", placeholder: "GET" },
  { key: "url", label: "URL", placeholder: "http://checkout.shop:8080/cart", wide: true },
  { key: "from", label: "Caller namespace", placeholder: "web" },
  { key: "port", label: "Port", placeholder: "from the URL" },
  { key: "grpc", label: "gRPC method", placeholder: "pkg.Service/Method" },
  { key: "origin", label: "Origin cluster", placeholder: "effective view" },
  { key: "seed", label: "Seed", placeholder: "constant 0" },
];

/** The Explain form. */
export function ExplainFormView(props: ExplainFormProps) {
  const { form, onChange, onSubmit, origins, agents } = props;
  const agentChosen = form.agent.trim() !== "";
  const invalid = (field: string) =>
    props.invalid === field ? { "aria-invalid": true, "aria-describedby": props.errorId } : {};
  const setRow = (index: number, row: HeaderRow) =>
    onChange({ ...form, headers: form.headers.map((old, i) => (i === index ? row : old)) });
  return (
    <form
      class="explain-form panel"
      aria-label="Request to explain"
      onSubmit={(event) => {
        event.preventDefault();
        onSubmit();
      }}
    >
      <div class="explain-fields">
        {FIELDS.map(({ key, label, placeholder, wide }) => (
          <label key={key} class={wide === true ? "wide" : undefined}>
            <span>{label}</span>
            <input
              name={key}
              value={form[key]}
              placeholder={placeholder}
              spellcheck={false}
              autocomplete="off"
              list={key === "origin" ? "explain-origins" : undefined}
              disabled={
                (key === "method" && form.grpc.trim() !== "") || (key === "origin" && agentChosen)
              }
              {...invalid(key)}
              onInput={(event) => onChange({ ...form, [key]: event.currentTarget.value })}
            />
          </label>
        ))}
        {(agents.length > 0 || agentChosen) && (
          <label>
            <span>Agent</span>
            {/* Named by aria-label: a wrapping label's name would take in the chosen option. */}
            <select
              name="agent"
              aria-label="Agent"
              value={form.agent}
              {...invalid("agent")}
              onChange={(event) => onChange({ ...form, agent: event.currentTarget.value })}
            >
              <option value="">none: the registrar's view</option>
              {[...new Set([...agents, ...(agentChosen ? [form.agent] : [])])].map((name) => (
                <option key={name} value={name}>
                  agent {name}
                </option>
              ))}
            </select>
          </label>
        )}
        <datalist id="explain-origins">
          {origins.map((origin) => (
            <option key={origin} value={origin} />
          ))}
        </datalist>
      </div>
      <fieldset class="explain-headers">
        <legend>Headers</legend>
        {form.headers.map((row, index) => (
          <div class="header-row" key={index}>
            <input
              aria-label={`Header ${index + 1} name`}
              {...invalid("headers")}
              value={row.name}
              placeholder="name"
              spellcheck={false}
              onInput={(event) => setRow(index, { ...row, name: event.currentTarget.value })}
            />
            <input
              aria-label={`Header ${index + 1} value`}
              {...invalid("headers")}
              value={row.value}
              placeholder="value"
              spellcheck={false}
              onInput={(event) => setRow(index, { ...row, value: event.currentTarget.value })}
            />
            <button
              type="button"
              aria-label={`Remove header ${index + 1}`}
              onClick={() =>
                onChange({ ...form, headers: form.headers.filter((_, i) => i !== index) })
              }
            >
              Remove
            </button>
          </div>
        ))}
        <button
          type="button"
          onClick={() => onChange({ ...form, headers: [...form.headers, { name: "", value: "" }] })}
        >
          Add header
        </button>
      </fieldset>
      <button type="submit" class="primary">
        Explain
      </button>
    </form>
  );
}
