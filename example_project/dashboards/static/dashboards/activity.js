// The customer site's activity panel: polls this site's list of the webhook events its
// receiver took (/demo/webhook/events/) and shows the newest, each with its time, its
// action, the group or end user it concerns and who did it.
//
// Events carry no secret (a token is named by its jti, a key by its prefix); the panel
// shows a few of their fields, built as text nodes: nothing from an event is parsed as
// HTML.
(() => {
  "use strict";

  const EVERY_MS = 2000;
  const seen = new Set();
  let first = true;

  function text(tag, className, value) {
    const node = document.createElement(tag);
    node.className = className;
    node.textContent = value;
    return node;
  }

  function clock(iso) {
    const at = new Date(iso);
    return Number.isNaN(at.getTime()) ? "" : at.toISOString().slice(11, 19);
  }

  // What the event changed, in a few words, from its details (never all of them).
  function summary(action, details) {
    const parts = [];
    if (action === "embed_token.revoked" && details.axis) {
      parts.push(`axis ${details.axis}${details.subtree ? " (subtree)" : ""}`);
    }
    if (action === "embed_token.minted") {
      if (details.resource) parts.push(`for ${details.resource}`);
      if (details.expires_at) parts.push(`until ${clock(details.expires_at)}`);
    }
    if (Array.isArray(details.fields) && details.fields.length) {
      parts.push(`changed ${details.fields.join(", ")}`);
    }
    if (details.name && action.startsWith("user_group.")) parts.push(`“${details.name}”`);
    if (details.prefix) parts.push(`key ${details.prefix}`);
    return parts.join(" · ");
  }

  function row(event, fresh) {
    const data = event.data || {};
    const action = String(data.action || event.type || "");
    const details = data.details && typeof data.details === "object" ? data.details : {};
    const item = document.createElement("li");
    item.className = fresh ? "activity-item is-new" : "activity-item";
    item.dataset.action = action;

    const time = text("time", "activity-time", clock(data.at || event.timestamp));
    time.dateTime = data.at || event.timestamp || "";
    const name = text("span", "activity-action", action);
    name.dataset.family = action.split(".")[0];
    if (action.endsWith(".revoked") || action.endsWith(".deleted") || action.endsWith(".disabled")) {
      name.classList.add("is-revocation");
    }

    const what = document.createElement("span");
    what.className = "activity-what";
    const subjects = [];
    if (data.user_group_id) subjects.push(`group ${data.user_group_id}`);
    if (data.end_user_id) subjects.push(`end user ${data.end_user_id}`);
    const said = summary(action, details);
    if (said) subjects.push(said);
    what.append(subjects.join(" · "));
    if (data.actor && data.actor.type) {
      what.append(" ", text("span", "activity-who", `by ${data.actor.type} ${data.actor.id || ""}`.trim()));
    }
    item.append(time, name, what);
    return item;
  }

  function render(panel, events) {
    const list = panel.querySelector(".activity-list");
    const shown = Number(panel.dataset.shown) || 12;
    // Newest first by the event's id (sortable by time): deliveries come in any order.
    const newest = events
      .filter((event) => event && event.data)
      .sort((a, b) => String(b.data.id).localeCompare(String(a.data.id)))
      .slice(0, shown);
    const items = newest.map((event) => row(event, !first && !seen.has(event.webhook_id)));
    newest.forEach((event) => seen.add(event.webhook_id));
    if (items.length) {
      list.replaceChildren(...items);
    } else {
      list.replaceChildren(text("li", "activity-empty", "No events yet: open a customer's dashboard."));
    }
    first = false;
  }

  function status(panel, message, down) {
    const node = panel.querySelector(".activity-status");
    node.textContent = message;
    node.classList.toggle("is-down", down);
  }

  async function poll(panel) {
    if (document.hidden) return;
    try {
      const response = await fetch(panel.dataset.eventsUrl, {
        headers: { Accept: "application/json" },
        credentials: "same-origin",
        cache: "no-store",
      });
      if (!response.ok) throw new Error(`HTTP ${response.status}`);
      const body = await response.json();
      render(panel, Array.isArray(body.events) ? body.events : []);
      status(panel, `Live · updated ${new Date().toISOString().slice(11, 19)} UTC`, false);
    } catch (error) {
      status(panel, "The receiver's events cannot be read right now; trying again.", true);
    }
  }

  document.addEventListener("DOMContentLoaded", () => {
    const panel = document.getElementById("activity");
    if (!panel) return;
    poll(panel);
    window.setInterval(() => poll(panel), EVERY_MS);
  });
})();
