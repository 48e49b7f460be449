import { type FormEvent, useCallback, useMemo, useState } from "react";
import { ApiError } from "../../api/client";
import { useApiTokens, useCreateApiToken, useRevokeApiToken } from "../../api/tokens";
import type { ApiToken, NewApiToken } from "../../api/types";
import { CopyButton } from "../../components/CopyButton";
import { type DataColumn, Table } from "../../components/DataTable";
import { EmptyState, ErrorAlert, FieldErrors, Loading } from "../../components/Feedback";
import { formatAgo, formatDateTime } from "../../lib/format";
import { useNow } from "../../lib/useNow";
import { PYTHON_SNIPPET, shellSnippet } from "./snippets";
import "./tokens.css";

const EXPIRY_CHOICES = [
  { label: "Never", days: null },
  { label: "In 30 days", days: 30 },
  { label: "In 90 days", days: 90 },
  { label: "In a year", days: 365 },
] as const;

export function TokensPage() {
  // The key of the token made on this visit: the server never shows it again.
  const [created, setCreated] = useState<NewApiToken | null>(null);
  const onRevoked = useCallback(
    (id: number) => setCreated((shown) => (shown?.id === id ? null : shown)),
    [],
  );
  return (
    <>
      <h1>API tokens</h1>
      <p className="muted page-intro">
        Training jobs, the <code>profiler-collect</code> command and scripts sign in to this server
        with an API token. Each works until you revoke it (or it expires); only you see yours.
      </p>
      <div className="tokens-grid">
        <CreateTokenCard created={created} onCreated={setCreated} />
        <CollectorSetupCard token={created?.token ?? null} />
      </div>
      <TokenList onRevoked={onRevoked} />
    </>
  );
}

function CreateTokenCard({
  created,
  onCreated,
}: {
  created: NewApiToken | null;
  onCreated: (token: NewApiToken) => void;
}) {
  const create = useCreateApiToken();
  const [name, setName] = useState("");
  const [expiryDays, setExpiryDays] = useState("");
  const fieldErrors = create.error instanceof ApiError ? create.error.fieldErrors : {};
  const nameErrors = fieldErrors.name ?? [];
  const expiryErrors = fieldErrors.expires_in_days ?? [];
  const otherError = create.isError && !nameErrors.length && !expiryErrors.length;

  const submit = (event: FormEvent) => {
    event.preventDefault();
    create.mutate(
      { name, expires_in_days: expiryDays === "" ? null : Number(expiryDays) },
      {
        onSuccess: (token) => {
          onCreated(token);
          setName("");
        },
      },
    );
  };

  return (
    <section className="card" aria-labelledby="create-token-heading">
      <h2 id="create-token-heading">Create a token</h2>
      <form onSubmit={submit} noValidate className="token-form">
        <label className="field">
          <span>Name</span>
          <input
            name="name"
            value={name}
            maxLength={100}
            placeholder="e.g. gpu-cluster-a"
            aria-invalid={nameErrors.length > 0}
            onChange={(event) => setName(event.target.value)}
          />
        </label>
        <FieldErrors messages={nameErrors} />
        <label className="field field-narrow">
          <span>Expires</span>
          <select
            name="expires_in_days"
            value={expiryDays}
            onChange={(event) => setExpiryDays(event.target.value)}
          >
            {EXPIRY_CHOICES.map((choice) => (
              <option key={choice.label} value={choice.days ?? ""}>
                {choice.label}
              </option>
            ))}
          </select>
        </label>
        <FieldErrors messages={expiryErrors} />
        {otherError && <ErrorAlert error={create.error} />}
        <div className="form-actions">
          <button type="submit" className="btn btn-primary" disabled={create.isPending}>
            {create.isPending ? "Creating…" : "Create token"}
          </button>
        </div>
      </form>
      {created && <NewTokenReveal token={created} />}
    </section>
  );
}

function NewTokenReveal({ token }: { token: NewApiToken }) {
  return (
    <div className="token-reveal" role="region" aria-label="New token">
      <p>
        Your new token <strong>{token.name}</strong>:
      </p>
      <div className="token-reveal-key">
        <code data-testid="new-token">{token.token}</code>
        <CopyButton text={token.token} />
      </div>
      <p className="token-reveal-warning">
        Copy it now: you will not see it again. Only a fingerprint of it is kept on the server; if
        you lose it, revoke it and create another.
      </p>
    </div>
  );
}

function CollectorSetupCard({ token }: { token: string | null }) {
  const shell = shellSnippet(window.location.origin, token);
  return (
    <section className="card" aria-labelledby="collector-setup-heading">
      <h2 id="collector-setup-heading">Send profiles from a training node</h2>
      <p className="muted">
        {token
          ? "With the token you just created:"
          : "Create a token first; it takes the place of <your token> below."}
      </p>
      <Snippet label="Shell" text={shell} testId="shell-snippet" />
      <p className="muted">In the training script:</p>
      <Snippet label="Python" text={PYTHON_SNIPPET} testId="python-snippet" />
    </section>
  );
}

function Snippet({ label, text, testId }: { label: string; text: string; testId: string }) {
  return (
    <div className="snippet">
      <div className="snippet-header">
        <span className="snippet-label">{label}</span>
        <CopyButton text={text} />
      </div>
      <pre data-testid={testId}>{text}</pre>
    </div>
  );
}

function TokenList({ onRevoked }: { onRevoked: (id: number) => void }) {
  const tokens = useApiTokens();
  const columns = useMemo(() => tokenColumns(onRevoked), [onRevoked]);
  return (
    <section className="card" aria-labelledby="token-list-heading">
      <h2 id="token-list-heading">Your tokens</h2>
      {tokens.isPending && <Loading what="your tokens" />}
      {tokens.isError && <ErrorAlert error={tokens.error} />}
      {tokens.data && tokens.data.length === 0 && (
        <EmptyState title="You have no API tokens yet">
          <p className="muted">Create one above for each machine or job that sends profiles.</p>
        </EmptyState>
      )}
      {tokens.data && tokens.data.length > 0 && (
        <Table
          label="Your tokens"
          className="tokens-table"
          rows={tokens.data}
          columns={columns}
          rowKey={(token) => token.id}
          rowAttributes={() => ({ "data-testid": "token-row" })}
        />
      )}
    </section>
  );
}

function tokenColumns(onRevoked: (id: number) => void): DataColumn<ApiToken>[] {
  return [
    { key: "name", label: "Name" },
    { key: "prefix", label: "Token", cell: (token) => <code>{token.prefix}…</code> },
    { key: "created", label: "Created", cell: (token) => formatDateTime(token.created) },
    {
      key: "last_used",
      label: "Last used",
      cell: (token) => <LastUsed token={token} />,
      cellTitle: (token) => (token.last_used ? formatDateTime(token.last_used) : undefined),
    },
    { key: "expiry", label: "Expires", cell: (token) => <Expiry token={token} /> },
    {
      key: "actions",
      label: "Actions",
      hiddenLabel: true,
      unsortable: true,
      className: "token-actions",
      cell: (token) => <RevokeToken token={token} onRevoked={onRevoked} />,
    },
  ];
}

function LastUsed({ token }: { token: ApiToken }) {
  const nowMs = useNow();
  return token.last_used ? formatAgo(token.last_used, nowMs) : "Never";
}

function Expiry({ token }: { token: ApiToken }) {
  const nowMs = useNow();
  const expired = token.expiry !== null && new Date(token.expiry).getTime() <= nowMs;
  return (
    <>
      {token.expiry === null ? "Never" : formatDateTime(token.expiry)}
      {expired && <span className="badge badge-expired">expired</span>}
    </>
  );
}

function RevokeToken({ token, onRevoked }: { token: ApiToken; onRevoked: (id: number) => void }) {
  const revoke = useRevokeApiToken();
  const [confirming, setConfirming] = useState(false);
  return (
    <>
      {revoke.isError && <ErrorAlert error={revoke.error} />}
      {confirming ? (
        <span className="revoke-confirm" role="group" aria-label={`Revoke ${token.name}?`}>
          <span>Revoke it? Anything using it stops at once.</span>
          <button
            type="button"
            className="btn btn-small btn-danger"
            disabled={revoke.isPending}
            onClick={() => revoke.mutate(token.id, { onSuccess: () => onRevoked(token.id) })}
          >
            {revoke.isPending ? "Revoking…" : "Revoke"}
          </button>
          <button type="button" className="btn btn-small" onClick={() => setConfirming(false)}>
            Cancel
          </button>
        </span>
      ) : (
        <button
          type="button"
          className="btn btn-small btn-danger-quiet"
          onClick={() => setConfirming(true)}
        >
          Revoke…
        </button>
      )}
    </>
  );
}
