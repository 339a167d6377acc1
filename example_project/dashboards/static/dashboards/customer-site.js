// The customer site's side of the embed, on the app's embed.js: the dashboard frame's
// token asks are answered with tokens minted by this site's backend, to the frame's origin
// only. The backend mints for the person signed in here (the frame's data-person, which it
// checks against the session) and answers {"error": "signed_out"} once they are signed
// out: the frame is told the session ended, and this page stops saying who is signed in.
// The token travels in the mint answer's body and in postMessage, never in a URL.
//
// "Sign out everywhere" is a form that this script sends with fetch, so that the page
// stays; its dashboard is reloaded at once, and refused a token, shows no more rows. In
// another browser the person's page learns when its dashboard does (its next request).
import { serveTokens } from "../usergroups/embed.js";

function csrfToken() {
  const meta = document.querySelector('meta[name="csrf-token"]');
  return meta ? meta.content : "";
}

// {embed_token, expires_in} from this site's backend, or its refusal {error}.
async function mint(frame) {
  const response = await fetch(frame.dataset.mintUrl, {
    method: "POST",
    headers: { "X-CSRFToken": csrfToken(), Accept: "application/json" },
    body: new URLSearchParams({ group: frame.dataset.group, person: frame.dataset.person || "" }),
    credentials: "same-origin",
    cache: "no-store",
  });
  const answer = await response.json();
  if (answer.error === "signed_out") showSignedOut();
  return answer;
}

// The person shown here was signed out everywhere (from this page or another browser).
function showSignedOut() {
  const notice = document.getElementById("signed-out-notice");
  if (!notice) return; // nobody was signed in on this page
  document.getElementById("viewer").hidden = true;
  notice.hidden = false;
  for (const person of document.querySelectorAll(".person.active")) {
    person.classList.remove("active");
    person.removeAttribute("aria-current");
  }
}

async function signOutEverywhere(form) {
  const button = form.querySelector("button");
  button.disabled = true;
  try {
    const response = await fetch(form.action, {
      method: "POST",
      headers: { Accept: "application/json" },
      body: new FormData(form), // with its csrfmiddlewaretoken
      credentials: "same-origin",
      cache: "no-store",
    });
    if (!response.ok) throw new Error(`status ${response.status}`);
  } catch (error) {
    button.disabled = false;
    return;
  }
  // Signed out: the page says so, and the dashboard goes at once rather than at its next
  // request. Reloaded, it asks for a token, which this site now refuses (signed_out):
  // the session ends, with no rows left on the screen.
  showSignedOut();
  const frame = document.getElementById("dashboard-frame");
  frame.src = frame.src;
}

document.addEventListener("submit", (event) => {
  if (event.target.id !== "sign-out-form") return;
  event.preventDefault();
  signOutEverywhere(event.target);
});

const frame = document.getElementById("dashboard-frame");
if (frame) serveTokens(frame, () => mint(frame));
