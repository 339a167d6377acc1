// A customer's framing page and a host's dashboard written against embed.d.ts, as
// docs/browser.md shows them: tsc --strict must accept both (tests/test_embed_types.py).
import {
  ENDED,
  VERSION,
  claimsOf,
  connect,
  serveTokens,
  type EmbedSession,
  type MintAnswer,
} from "../../usergroups/static/usergroups/embed.js";

// The framing page: its backend's answer, passed through.
const frame = document.getElementById("dashboard-frame") as HTMLIFrameElement;
const stop: () => void = serveTokens(frame, async (): Promise<MintAnswer> => {
  const answer = await fetch("/embed-token", { method: "POST" });
  return answer.json();
});
serveTokens(frame, () => ({ error: "signed_out" }), { origin: "https://analytics.example" });
stop();

// The dashboard, framed.
const session: EmbedSession = connect({
  parents: ["https://customer.example"],
  sizeOf: document.documentElement,
});
session.addEventListener("token", (event) => {
  const seconds: number = event.detail.expiresIn;
  const person: unknown = event.detail.claims.end_user_id;
  console.log(seconds, person);
});
session.addEventListener("ended", (event) => {
  const code: string = event.detail.code;
  const claims: Record<string, unknown> | undefined = event.detail.claims;
  console.log(code, claims, ENDED.includes(code as (typeof ENDED)[number]));
});
session.addEventListener("unavailable", ({ detail }) => console.log(detail.code));
// Any other listener an EventTarget takes, and its removal.
const any = (event: Event) => console.log(event.type);
session.addEventListener("token", any, { once: true });
session.removeEventListener("token", any);

async function load(): Promise<unknown> {
  const token: string = await session.ready();
  console.log(claimsOf(token)?.exp, VERSION === 1, session.ended ?? "live");
  const answer: Response = await session.fetch("/embed/api/sales/", { method: "GET" });
  return answer.json();
}
load().finally(() => session.close());

// Without a frame: the page's own backend.
const alone = connect({
  getToken: () => fetch("/my/embed-token", { method: "POST" }).then((a) => a.json()),
});
alone.close();
