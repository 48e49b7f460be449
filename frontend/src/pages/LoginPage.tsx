import { type FormEvent, useState } from "react";
import { Navigate, useNavigate, useSearchParams } from "react-router";
import { useLogin, useMe, useSignInOptions } from "../api/auth";
import { ErrorAlert, Loading } from "../components/Feedback";
import { ProviderSignIn, ProviderSignInFailed } from "../components/ProviderSignIn";
import { safeNext } from "../lib/navigation";

export function LoginPage() {
  // Asking who we are first also makes Django set the csrftoken cookie the login POST needs.
  const me = useMe();
  const options = useSignInOptions();
  const login = useLogin();
  const navigate = useNavigate();
  const [params] = useSearchParams();
  const [username, setUsername] = useState("");
  const [password, setPassword] = useState("");
  const next = safeNext(params.get("next"));
  const provider = options.data?.identity_provider ?? null;

  if (me.data) return <Navigate to={next} replace />;

  const submit = (event: FormEvent) => {
    event.preventDefault();
    login.mutate({ username, password }, { onSuccess: () => navigate(next, { replace: true }) });
  };

  return (
    <div className="login-screen">
      <div className="card login-card">
        <h1>Profiler</h1>
        <p className="muted">Sign in to see your team's training jobs.</p>
        {me.isPending && <Loading what="your session" />}
        {params.get("sso") === "failed" && <ProviderSignInFailed provider={provider} />}
        {provider && <ProviderSignIn provider={provider} next={next} />}
        <form onSubmit={submit}>
          {login.isError && <ErrorAlert error={login.error} />}
          <label className="field">
            <span>User name</span>
            <input
              name="username"
              autoComplete="username"
              autoFocus={!provider}
              required
              value={username}
              onChange={(event) => setUsername(event.target.value)}
            />
          </label>
          <label className="field">
            <span>Password</span>
            <input
              name="password"
              type="password"
              autoComplete="current-password"
              required
              value={password}
              onChange={(event) => setPassword(event.target.value)}
            />
          </label>
          <button
            type="submit"
            className={provider ? "btn" : "btn btn-primary"}
            disabled={login.isPending || me.isPending}
          >
            {login.isPending ? "Signing in…" : "Sign in"}
          </button>
        </form>
      </div>
    </div>
  );
}
