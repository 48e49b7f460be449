import { render, screen } from "@testing-library/react";
import { describe, expect, it } from "vitest";
import { ProviderSignIn, ProviderSignInFailed } from "./ProviderSignIn";

const keycloak = { name: "Keycloak", start_url: "/api/auth/oidc/start/" };

describe("ProviderSignIn", () => {
  it("sends the browser to the provider with the page to come back to", () => {
    render(<ProviderSignIn provider={keycloak} next="/jobs/7/timeline?rank=1" />);
    expect(screen.getByRole("link", { name: "Sign in with Keycloak" })).toHaveAttribute(
      "href",
      "/api/auth/oidc/start/?next=%2Fjobs%2F7%2Ftimeline%3Frank%3D1",
    );
    expect(screen.getByText("or with a local account")).toBeInTheDocument();
  });

  it("names the provider whose sign-in failed, or none when it is no longer set up", () => {
    const { unmount } = render(<ProviderSignInFailed provider={keycloak} />);
    expect(screen.getByRole("alert")).toHaveTextContent(
      "Signing in with Keycloak did not work. Try again, or ask whoever runs this server " +
        "whether your account may use it.",
    );
    unmount();
    render(<ProviderSignInFailed provider={null} />);
    expect(screen.getByRole("alert")).toHaveTextContent(
      "Signing in with your identity provider did not work.",
    );
  });
});
