// The customer site's side of the embed: mint embed tokens through this site's backend
// and hand them to the dashboard frame.
//
// The frame asks ("usergroups:ready" when it starts, "usergroups:token-request" before
// its token expires or when it was refused as expired); each ask gets a freshly minted
// token. Messages are taken only from the frame's window and origin, and answered to
// that origin only. The token travels in the mint answer's body and in postMessage:
// never in a URL.
(() => {
  "use strict";

  const ASKS = new Set(["usergroups:ready", "usergroups:token-request"]);

  function csrfToken() {
    const meta = document.querySelector('meta[name="csrf-token"]');
    return meta ? meta.content : "";
  }

  // {embed_token, expires_in} from this site's backend, or null if it refused.
  async function mint(frame) {
    try {
      const response = await fetch(frame.dataset.mintUrl, {
        method: "POST",
        headers: { "X-CSRFToken": csrfToken(), Accept: "application/json" },
        body: new URLSearchParams({ group: frame.dataset.group }),
        credentials: "same-origin",
        cache: "no-store",
      });
      return response.ok ? await response.json() : null;
    } catch (error) {
      return null;
    }
  }

  window.addEventListener("message", async (event) => {
    const frame = document.getElementById("dashboard-frame");
    if (!frame || event.source !== frame.contentWindow) return;
    const frameOrigin = new URL(frame.src, window.location.href).origin;
    if (event.origin !== frameOrigin) return;
    const message = event.data || {};
    if (ASKS.has(message.type)) {
      const minted = await mint(frame);
      const answer = minted
        ? { type: "usergroups:embed-token", token: minted.embed_token, expiresIn: minted.expires_in }
        : { type: "usergroups:embed-token-refused" };
      frame.contentWindow.postMessage(answer, frameOrigin);
    } else if (message.type === "usergroups:resize" && Number.isFinite(message.height)) {
      frame.style.height = `${Math.ceil(message.height)}px`;
    }
  });
})();
