import type { SignInOptions } from "../api/auth";
import "./ProviderSignIn.css";

type Provider = NonNullable<SignInOptions["identity_provider"]>;

/** The login page's way in through the team's identity provider (a full-page redirect). */
export function ProviderSignIn({ provider, next }: { provider: Provider; next: string }) {
  return (
    <>
      <a
        className="btn btn-primary login-provider"
        href={`${provider.start_url}?${new URLSearchParams({ next })}`}
      >
        Sign in with {provider.name}
      </a>
      <p className="login-or">or with a local account</p>
    </>
  );
}

/** Shown when the provider sent the person back without signing them in. */
export function ProviderSignInFailed({ provider }: { provider: Provider | null }) {
  return (
    <div className="alert alert-error" role="alert">
      Signing in with {provider?.name ?? "your identity provider"} did not work. Try again, or ask
      whoever runs this server whether your account may use it.
    </div>
  );
}
