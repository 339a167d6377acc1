// The customer site's side of the embed: hand the group token to the dashboard frame.
//
// The token came from this site's backend, rendered into the page as JSON (never in a
// URL). It is posted only to the frame's own origin, and only when that frame asks.
(() => {
  "use strict";

  function frameAndToken() {
    const frame = document.getElementById("dashboard-frame");
    const tokenElement = document.getElementById("group-token");
    if (!frame || !tokenElement) return [null, null];
    return [frame, JSON.parse(tokenElement.textContent)];
  }

  window.addEventListener("message", (event) => {
    const [frame, token] = frameAndToken();
    if (!frame || event.source !== frame.contentWindow) return;
    const frameOrigin = new URL(frame.src, window.location.href).origin;
    if (event.origin !== frameOrigin) return;
    const message = event.data || {};
    if (message.type === "usergroups:ready") {
      frame.contentWindow.postMessage({ type: "usergroups:token", token }, frameOrigin);
    } else if (message.type === "usergroups:resize" && Number.isFinite(message.height)) {
      frame.style.height = `${Math.ceil(message.height)}px`;
    }
  });
})();
