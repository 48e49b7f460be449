import { describe, expect, it } from "vitest";
import { createQueryClient } from "../queryClient";
import { alice, FakeApi, loadedProfile, makeJob } from "../test/fakeApi";
import { meKey } from "./auth";
import { loadedProfileKey, prefetchSession } from "./loadedProfile";

describe("prefetchSession", () => {
  it("asks who is signed in, then what they have loaded, before any page mounts", async () => {
    const job = makeJob({ id: 7, name: "resnet" });
    const api = new FakeApi()
      .on("GET /api/auth/me/", { status: 200, body: alice })
      .on("GET /api/loaded-profile/", { status: 200, body: loadedProfile(job) });
    const client = createQueryClient();
    await prefetchSession(client);
    expect(client.getQueryData(meKey)).toEqual(alice);
    expect(client.getQueryData(loadedProfileKey)).toEqual(loadedProfile(job));
    expect(api.sent("GET /api/loaded-profile/")).toHaveLength(1);
  });

  it("asks an anonymous visitor nothing more (the login page logs no refusal)", async () => {
    const api = new FakeApi().on("GET /api/auth/me/", {
      status: 403,
      body: { detail: "Authentication credentials were not provided.", code: "not_authenticated" },
    });
    const client = createQueryClient();
    await prefetchSession(client);
    expect(client.getQueryData(meKey)).toBeNull();
    expect(api.sent("GET /api/loaded-profile/")).toHaveLength(0);
  });
});
