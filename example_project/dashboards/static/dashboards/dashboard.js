// The embedded dashboard, on the app's embed.js: it takes embed tokens from the customer
// site (its parent frame), fetches the group's rows with them and draws a chart and a table.
//
// embed.js asks the parent for a fresh token at two thirds of each one's life and once
// more after a 401 token_expired, without reloading: the region filter and everything
// else on the page stay as they are. A session that ends says why, by the code embed.js
// reports: "Access revoked" (authentication_failed: the group's token was rotated, its
// embed tokens revoked), "Session ended" when the customer site signed the person out
// everywhere (signed_out) or the host disabled them (end_user_disabled). The dashboard
// never falls back to a token for someone else.
import { connect } from "../usergroups/embed.js";

const root = document.getElementById("dashboard");
const salesUrl = root.dataset.salesUrl;
const $ = (id) => document.getElementById(id);
const numbers = new Intl.NumberFormat("en-US");
const COLORS = ["#4f6bed", "#16a085", "#f29d38", "#c2417f", "#7a8699", "#8e5cd9"];
const SVG = "http://www.w3.org/2000/svg";
// This site's own origin and the configured customer sites' (the page's frame-ancestors).
const parents = JSON.parse($("parent-origins").textContent);
let session = null;
let current = null; // the last answer, drawn through the filters
const filters = { region: "" };

function setState(state) {
  root.dataset.state = state;
  $("refresh").disabled = !session || session.ended !== undefined || state === "loading";
}

function showStatus(kind, title, text) {
  const status = $("status");
  status.className = `status status-${kind}`;
  $("status-title").textContent = title;
  $("status-text").textContent = text;
  status.hidden = false;
}

function showError(state, title, text, kind = "error") {
  $("dash-title").textContent = "Sales";
  $("dash-sub").textContent = "";
  $("content").hidden = true;
  $("rows").tBodies[0].replaceChildren();
  $("chart").replaceChildren();
  showStatus(kind, title, text);
  setState(state);
}

// The host refused a token that names a person as revoked (401 authentication_failed):
// the person was signed out everywhere or disabled, or the group's access was revoked,
// which the host does not tell apart. The customer site knows: asked once more for a
// token, as a reloaded dashboard would, it refuses one for a person it signed out
// (signed_out) or the host disabled (end_user_disabled); it mints one, unused here, for a
// person still signed in, whose group's access was revoked then.
function showEnded({ code, claims }) {
  const endUserId = claims && claims.end_user_id;
  if (code !== "authentication_failed" || !endUserId) return showWhy(code, endUserId);
  const asked = connect({ parents });
  asked
    .ready()
    .then(
      () => showWhy(code, endUserId),
      () => showWhy(asked.ended || code, endUserId),
    )
    .finally(() => asked.close());
}

function showWhy(code, endUserId) {
  const viewer = current && current.end_user ? current.end_user.display_name : endUserId || "The person";
  const signIn = "this dashboard shows no more data. Sign in again on the customer site.";
  if (code === "signed_out") {
    showError("ended", "Session ended.", `${viewer} was signed out everywhere: ${signIn}`, "ended");
  } else if (code === "end_user_disabled") {
    showError("ended", "Session ended.", `${viewer}'s access is disabled on the analytics host: ${signIn}`, "ended");
  } else {
    showError(
      "revoked",
      "Access revoked.",
      "This dashboard's access was revoked: the group's token was rotated, its embed " +
        "tokens revoked or the group deleted. Reload the page to start again.",
    );
  }
}

async function load() {
  if (session.ended !== undefined) return;
  setState("loading");
  let response;
  let body = null;
  try {
    response = await session.fetch(salesUrl, {
      headers: { Accept: "application/json" },
      credentials: "omit",
      cache: "no-store",
    });
    body = await response.json().catch(() => null);
  } catch (error) {
    if (session.ended === undefined) showError("error", "Unreachable.", "The dashboard could not reach its server.");
    return;
  }
  if (session.ended !== undefined) return; // the "ended" event has shown it
  if (!response.ok || !body || body.success !== 1) {
    const message = body && body.error ? body.error.message : `The server answered ${response.status}.`;
    showError("error", "No data.", message);
    return;
  }
  current = body;
  draw();
}

function cell(row, text, className) {
  const td = row.insertCell();
  td.textContent = text;
  if (className) td.className = className;
}

// The region filter offers the regions of the data; a choice the data still has stays.
function fillRegionFilter(regions) {
  const select = $("region-filter");
  if (!regions.includes(filters.region)) filters.region = "";
  const all = new Option("All regions", "");
  select.replaceChildren(all, ...regions.map((region) => new Option(region, region)));
  select.value = filters.region;
  select.disabled = false;
}

function draw() {
  const data = current;
  const allRegions = [...new Set(data.rows.map((row) => row.region))].sort();
  fillRegionFilter(allRegions);
  const rows = data.rows.filter((row) => !filters.region || row.region === filters.region);
  const regions = [...new Set(rows.map((row) => row.region))].sort();
  const months = [...new Set(rows.map((row) => row.month))].sort();
  // A region keeps its colour whatever the filter shows.
  const color = new Map(allRegions.map((region, i) => [region, COLORS[i % COLORS.length]]));
  const totals = new Map(); // "month|region" -> amount
  const byMonth = new Map();
  for (const row of rows) {
    const key = `${row.month}|${row.region}`;
    totals.set(key, (totals.get(key) || 0) + row.amount);
    byMonth.set(row.month, (byMonth.get(row.month) || 0) + row.amount);
  }
  const total = rows.reduce((sum, row) => sum + row.amount, 0);
  const best = [...byMonth].sort((a, b) => b[1] - a[1])[0];

  $("dash-title").textContent = `Sales · ${data.user_group.name}`;
  const listed = (value) => [].concat(value ?? []).join(", ");
  const wanted = listed(data.variables.regions);
  const narrowed = "territory" in data.variables ? ` · territory ${listed(data.variables.territory) || "none"}` : "";
  $("dash-sub").textContent = `Data source ${data.data_source} · regions ${wanted || "none"}${narrowed}`;
  drawViewer(data, listed);
  $("kpi-total").textContent = numbers.format(total);
  $("kpi-best").textContent = best ? `${monthName(best[0])} (${numbers.format(best[1])})` : "–";
  $("kpi-regions").textContent = regions.join(", ") || "–";
  $("kpi-rows").textContent = numbers.format(rows.length);

  const body = $("rows").tBodies[0];
  body.replaceChildren();
  for (const row of rows) {
    const tr = body.insertRow();
    cell(tr, row.region, "region");
    cell(tr, row.product);
    cell(tr, monthName(row.month));
    cell(tr, numbers.format(row.amount), "num");
  }
  if (!rows.length) {
    const tr = body.insertRow();
    const td = tr.insertCell();
    td.colSpan = 4;
    td.className = "empty";
    td.textContent = "No rows for this group's regions.";
  }

  $("legend").replaceChildren(
    ...regions.map((region) => {
      const item = document.createElement("span");
      item.className = "legend-item";
      const swatch = document.createElementNS(SVG, "svg");
      swatch.setAttribute("width", "12");
      swatch.setAttribute("height", "12");
      swatch.append(svg("rect", { width: 12, height: 12, rx: 3, fill: color.get(region) }));
      item.append(swatch, document.createTextNode(region));
      return item;
    }),
  );
  drawChart(months, regions, totals, color);
  $("query-sql").textContent = data.query.sql;
  $("query-params").textContent = JSON.stringify(data.query.params);

  $("status").hidden = true;
  $("content").hidden = false;
  setState("ready");
}

// "Viewing as Anna Schmidt (Acme Europe)", then each variable that filters the rows with
// where the host says its value came from (variable_sources): the group of the lineage
// that set it, the person's attributes, or the token's params.
function drawViewer(data, listed) {
  const group = data.user_group.name;
  $("viewing-as").textContent = data.end_user
    ? `Viewing as ${data.end_user.display_name} (${group})`
    : `Viewing as ${group} (no person)`;
  const sources = data.variable_sources || {};
  $("provenance").replaceChildren(
    ...Object.entries(data.variables).map(([name, value]) => {
      const item = document.createElement("li");
      item.dataset.variable = name;
      item.dataset.source = sources[name] || "";
      const key = document.createElement("code");
      key.textContent = name;
      const from = document.createElement("span");
      from.className = "source";
      from.textContent = `from ${describeSource(sources[name], data)}`;
      item.append(key, document.createTextNode(` ${listed(value) || "none"} `), from);
      return item;
    }),
  );
}

function describeSource(source, data) {
  if (!source) return "the group";
  if (source === "end_user") return data.end_user ? `${data.end_user.display_name}'s attributes` : "the person";
  if (source === "params") return "the token's params";
  return source.startsWith("user_group:") ? `group ${source.slice("user_group:".length)}` : source;
}

function monthName(month) {
  const [year, number] = month.split("-").map(Number);
  if (!year || !number) return month;
  return new Date(Date.UTC(year, number - 1, 1)).toLocaleString("en-US", {
    month: "short",
    year: "numeric",
    timeZone: "UTC",
  });
}

function svg(name, attributes, text) {
  const element = document.createElementNS(SVG, name);
  for (const [key, value] of Object.entries(attributes)) element.setAttribute(key, value);
  if (text !== undefined) element.textContent = text;
  return element;
}

// The top of the axis: four equal steps of a round size (…, 5,000, 7,500, 10,000, …).
function niceMax(value, ticks) {
  if (value <= 0) return ticks;
  const raw = value / ticks;
  const power = 10 ** Math.floor(Math.log10(raw));
  const factor = [1, 1.5, 2, 2.5, 3, 4, 5, 7.5, 10].find((f) => f * power >= raw);
  return factor * power * ticks;
}

function drawChart(months, regions, totals, color) {
  const chart = $("chart");
  const [width, height] = [760, 260];
  const margin = { top: 12, right: 8, bottom: 30, left: 64 };
  const plotW = width - margin.left - margin.right;
  const plotH = height - margin.top - margin.bottom;
  const max = niceMax(Math.max(0, ...totals.values()), 4);
  const y = (value) => margin.top + plotH - (value / max) * plotH;
  const parts = [];
  for (let i = 0; i <= 4; i++) {
    const value = (max / 4) * i;
    parts.push(svg("line", { x1: margin.left, x2: width - margin.right, y1: y(value), y2: y(value), class: "grid" }));
    parts.push(svg("text", { x: margin.left - 10, y: y(value) + 4, class: "axis", "text-anchor": "end" }, numbers.format(value)));
  }
  const slot = months.length ? plotW / months.length : plotW;
  const inner = slot * 0.72;
  const barW = regions.length ? inner / regions.length : inner;
  months.forEach((month, m) => {
    const x0 = margin.left + m * slot + (slot - inner) / 2;
    regions.forEach((region, r) => {
      const value = totals.get(`${month}|${region}`) || 0;
      const bar = svg("rect", {
        x: x0 + r * barW + 1,
        y: y(value),
        width: Math.max(barW - 2, 1),
        height: Math.max(margin.top + plotH - y(value), 0),
        rx: 3,
        fill: color.get(region),
        class: "bar",
      });
      bar.append(svg("title", {}, `${region}, ${monthName(month)}: ${numbers.format(value)}`));
      parts.push(bar);
    });
    parts.push(svg("text", { x: margin.left + m * slot + slot / 2, y: height - 8, class: "axis", "text-anchor": "middle" }, monthName(month)));
  });
  chart.replaceChildren(...parts);
}

$("refresh").addEventListener("click", () => load());
$("region-filter").addEventListener("change", (event) => {
  filters.region = event.target.value;
  if (current) draw();
});

if (window.parent === window) {
  $("dash-sub").textContent = "";
  $("refresh").hidden = true;
  showStatus("info", "Embedded only.", "A customer site frames this page and hands it an embed token; open /demo/.");
} else {
  // The frame takes the page's height, and shrinks with it.
  session = connect({ parents, sizeOf: document.documentElement });
  session.addEventListener("token", () => {
    root.dataset.tokens = String(Number(root.dataset.tokens || 0) + 1);
  });
  session.addEventListener("ended", (event) => showEnded(event.detail));
  session.addEventListener("unavailable", () => {
    showError("refused", "No access.", "The customer site could not get a token for this dashboard.");
  });
  session.ready().then(() => {
    $("dash-sub").textContent = "Loading…";
    load();
  }, () => {});
}
