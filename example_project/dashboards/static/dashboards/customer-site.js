// The customer site's side of the embed: mint embed tokens through this site's backend
// and hand them to the dashboard frame.
//
// The frame asks ("usergroups:ready" when it starts, "usergroups:token-request" before
// its token expires or when it was refused as expired); each ask gets a freshly minted
// token. Messages are taken only from the frame's window and origin, and answered to
// that origin only. The token travels in the mint answer's body and in postMessage:
// never in a URL. The backend mints for the person signed in here (the frame's
// data-person, which the backend checks against the session); once that person is
// signed out it refuses, and the frame is told the session ended.
//
// "Sign out everywhere" is a form; this script sends it with fetch so that the page, and
// the dashboard open in it, stay: the dashboard learns at its next request.
(() => {
  "use strict";

  const ASKS = new Set(["usergroups:ready", "usergroups:token-request"]);

  function csrfToken() {
    const meta = document.querySelector('meta[name="csrf-token"]');
    return meta ? meta.content : "";
  }

  // {embed_token, expires_in} from this site's backend, {error} if it refused (error
  // "signed_out": the person is no longer signed in here; "end_user_disabled": the host
  // disabled them), or null.
  async function mint(frame) {
    try {
      const response = await fetch(frame.dataset.mintUrl, {
        method: "POST",
        headers: { "X-CSRFToken": csrfToken(), Accept: "application/json" },
        body: new URLSearchParams({ group: frame.dataset.group, person: frame.dataset.person || "" }),
        credentials: "same-origin",
        cache: "no-store",
      });
      const body = await response.json().catch(() => null);
      if (response.ok) return body;
      return { error: body && body.error ? body.error : `status ${response.status}` };
    } catch (error) {
      return null;
    }
  }

  function answerFor(minted) {
    if (minted && minted.embed_token) {
      return { type: "usergroups:embed-token", token: minted.embed_token, expiresIn: minted.expires_in };
    }
    const ended = minted && ["signed_out", "end_user_disabled"].includes(minted.error);
    const reason = ended ? "session-ended" : "";
    return { type: "usergroups:embed-token-refused", reason };
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
    // Signed out: the page says so; the open dashboard finds out at its next request.
    document.getElementById("viewer").hidden = true;
    document.getElementById("signed-out-notice").hidden = false;
    for (const person of document.querySelectorAll(".person.active")) {
      person.classList.remove("active");
      person.removeAttribute("aria-current");
    }
  }

  document.addEventListener("submit", (event) => {
    if (event.target.id !== "sign-out-form") return;
    event.preventDefault();
    signOutEverywhere(event.target);
  });

  window.addEventListener("message", async (event) => {
    const frame = document.getElementById("dashboard-frame");
    if (!frame || event.source !== frame.contentWindow) return;
    const frameOrigin = new URL(frame.src, window.location.href).origin;
    if (event.origin !== frameOrigin) return;
    const message = event.data || {};
    if (ASKS.has(message.type)) {
      frame.contentWindow.postMessage(answerFor(await mint(frame)), frameOrigin);
    } else if (message.type === "usergroups:resize" && Number.isFinite(message.height)) {
      frame.style.height = `${Math.ceil(message.height)}px`;
    }
  });
})();
