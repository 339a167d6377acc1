// django-usergroups' embed tokens in the browser; docs/browser.md. No dependency.
export const VERSION = 1;
const P = "usergroups:";
// Refusals that end a session: a fresh token would not help.
export const ENDED = ["authentication_failed", "end_user_disabled", "origin_not_allowed", "signed_out"];

const ours = (m) => m && m.v === VERSION;

// A mint's answer as {token, expiresIn}; anything else as {code}.
function read(answer) {
  const { embed_token: token, expires_in, error } = answer || {};
  if (typeof token === "string") return { token, expiresIn: +expires_in };
  return { code: String((error && error.code) || error || "unavailable") };
}

const ask = (getToken) => Promise.resolve().then(getToken).then(read, () => read());

// A JWT's claims (readable by anyone; never trusted for access).
export function claimsOf(jwt) {
  try {
    return JSON.parse(atob(jwt.split(".")[1].replace(/-/g, "+").replace(/_/g, "/")));
  } catch {
    return null;
  }
}

// A refusal's code: WWW-Authenticate's error="...", else the body's error.code.
async function codeOf(response) {
  const header = /error="([^"]*)"/.exec(response.headers.get("WWW-Authenticate"));
  if (header) return header[1];
  return response.clone().json().then((body) => String(body.error.code)).catch(() => "");
}

// The framing page: answers with getToken() (its backend), to the frame's origin only.
export function serveTokens(frame, getToken, { origin } = {}) {
  const target = origin || new URL(frame.src, location.href).origin;
  if (!target.includes("://")) throw new Error(`no frame origin: ${target}`); // never "*"
  let last;
  const listener = async ({ source, origin: from, data: m }) => {
    if (!source || source !== frame.contentWindow || from !== target || !ours(m)) return;
    if (m.type === P + "resize" && m.height > 0) frame.style.height = `${Math.ceil(m.height)}px`;
    if (m.type !== P + "ready" && m.type !== P + "token-request") return;
    if (m.id && m.id === last) return; // said again: answered once
    last = m.id;
    const got = await ask(getToken);
    const reply = got.token
      ? { type: P + "embed-token", token: got.token, expiresIn: got.expiresIn }
      : { type: P + "embed-token-refused", code: got.code };
    source.postMessage({ v: VERSION, id: m.id, ...reply }, target);
  };
  addEventListener("message", listener);
  return () => removeEventListener("message", listener);
}

// The dashboard: takes tokens from the parent origins given, or from getToken().
export function connect({ parents = [], getToken, sizeOf } = {}) {
  const session = new EventTarget();
  let token, claims, timer, repeat, gone;
  const waiting = [];
  const emit = (type, detail) => session.dispatchEvent(new CustomEvent(type, { detail }));
  const post = (type, extra) => {
    for (const o of parents) parent.postMessage({ v: VERSION, type: P + type, ...extra }, o);
  };

  // The whole page: the body's margins and those within it lie outside an element's box.
  // Not scrollHeight, which is never less than the frame's: the frame could not shrink.
  const page = document.documentElement;
  const size = () => sizeOf && post("resize", { height: page.getBoundingClientRect().height });

  function request(type) {
    if (getToken) return ask(getToken).then(take);
    const message = { id: Math.random() }; // a reloaded frame's too is new
    const say = () => (post(type, message), size());
    say();
    // The page's script may not listen yet: again, same id, and the size it missed.
    repeat = setInterval(say, 1000);
  }

  const next = (type) =>
    new Promise((ok, fail) => waiting.push([ok, fail]) === 1 && request(type));

  function settle(error) {
    clearInterval(repeat);
    for (const [ok, fail] of waiting.splice(0)) error ? fail(error) : ok(token);
  }

  function take(got) {
    if (session.ended) return;
    const { code } = got;
    if (ENDED.includes(code)) return end(code);
    if (!got.token) return emit("unavailable", { code }), settle(new Error(code));
    token = got.token;
    claims = claimsOf(token) || {};
    const seconds = got.expiresIn > 0 ? got.expiresIn : claims.exp - claims.iat;
    clearTimeout(timer);
    // At two thirds of its life: in time even if the backend is slow.
    const refresh = () => next("token-request").catch(() => {});
    if (seconds > 0) timer = setTimeout(refresh, (seconds * 2000) / 3);
    emit("token", { expiresIn: seconds, claims });
    settle();
  }

  function end(code) {
    session.ended = code;
    gone = Object.assign(new Error(`session ended: ${code}`), { code });
    token = null;
    clearTimeout(timer);
    emit("ended", { code, claims });
    settle(gone);
  }

  const onMessage = ({ source, origin, data: m }) => {
    if (source !== parent || !parents.includes(origin) || !ours(m)) return;
    if (m.type === P + "embed-token" && typeof m.token === "string") {
      // Not a token locked to another origin than its sender's or this page's.
      const locked = (claimsOf(m.token) || {}).origin;
      const ok = !locked || locked === origin || locked === location.origin;
      if (ok) take({ token: m.token, expiresIn: +m.expiresIn });
    } else if (m.type === P + "embed-token-refused") take({ code: `${m.code}` });
  };

  session.ready = () =>
    gone ? Promise.reject(gone) : token ? Promise.resolve(token) : next("token-request");

  // Once more with a fresh token after 401 token_expired.
  session.fetch = async (url, init = {}) => {
    for (let retry = 0; ; retry++) {
      const sent = await session.ready();
      const headers = new Headers(init.headers);
      headers.set("Authorization", `Embed ${sent}`);
      const response = await fetch(url, { ...init, headers });
      const code = [401, 403].includes(response.status) ? await codeOf(response) : "";
      if (code === "token_expired" && !retry) {
        if (token === sent) token = null;
        continue;
      }
      if (ENDED.includes(code) && (token === sent || !token)) end(code);
      return response;
    }
  };

  session.close = () => {
    clearTimeout(timer);
    clearInterval(repeat);
    removeEventListener("message", onMessage);
  };

  if (!getToken) {
    addEventListener("message", onMessage);
    if (sizeOf) new ResizeObserver(size).observe(page);
  }
  next("ready").catch(() => {});
  return session;
}
