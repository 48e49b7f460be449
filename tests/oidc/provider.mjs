// A real OpenID Connect provider on loopback for the sign-in tests (node-oidc-provider,
// OpenID Certified): one confidential client, two people with a `groups` claim, and the
// library's own login form (devInteractions: any password). Consent is given in advance, as a
// team's provider does for its own applications.
//
//   node provider.mjs <client_id> <client_secret> <redirect_uri>[,<redirect_uri>…]
// prints "issuer <url>" once it listens on a free port of 127.0.0.1.
import http from "node:http";
import Provider from "oidc-provider";

const [clientId, clientSecret, redirectUris] = process.argv.slice(2);

const PEOPLE = {
  alice: { email: "alice@example.com", name: "Alice Admin", groups: ["profiler-admins", "ml"] },
  bob: { email: "bob@example.com", name: "Bob Builder", groups: ["ml"] },
};

const server = http.createServer();
server.listen(0, "127.0.0.1", () => {
  const issuer = `http://127.0.0.1:${server.address().port}`;
  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: clientId,
        client_secret: clientSecret,
        redirect_uris: redirectUris.split(","),
        grant_types: ["authorization_code"],
        response_types: ["code"],
      },
    ],
    cookies: { keys: ["a key for the tests only"] },
    features: { devInteractions: { enabled: true } },
    scopes: ["openid", "email", "profile", "groups"],
    claims: {
      openid: ["sub"],
      email: ["email", "email_verified"],
      profile: ["preferred_username", "name"],
      groups: ["groups"],
    },
    async findAccount(_ctx, sub) {
      const person = PEOPLE[sub];
      if (!person) return undefined;
      return {
        accountId: sub,
        claims: async () => ({ sub, preferred_username: sub, email_verified: true, ...person }),
      };
    },
    async loadExistingGrant(ctx) {
      const grant = new ctx.oidc.provider.Grant({
        clientId: ctx.oidc.client.clientId,
        accountId: ctx.oidc.session.accountId,
      });
      grant.addOIDCScope("openid email profile groups");
      await grant.save();
      return grant;
    },
  });
  server.on("request", provider.callback());
  console.log(`issuer ${issuer}`);
});
