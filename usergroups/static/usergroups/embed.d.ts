// Types of embed.js (django-usergroups' browser side). The protocol: docs/browser.md.

/** The message protocol's version: every message carries it as `v`. */
export const VERSION: 1;

/** The refusal codes that end a session: a fresh token would not help. */
export const ENDED: readonly [
  "authentication_failed",
  "end_user_disabled",
  "origin_not_allowed",
  "signed_out",
];

/** What a token function resolves to: the mint's answer, passed through from
 * `POST /api/user/embed-token`, or a refusal (`{"error": "signed_out"}`, or the API's
 * failure body `{"error": {"code": ...}}`). A rejection counts as `unavailable`. */
export type MintAnswer =
  | { embed_token: string; expires_in: number }
  | { error: string | { code: string } };

export type TokenFunction = () => Promise<MintAnswer> | MintAnswer;

/** A JWT's claims, decoded but not verified (null if it is not a JWT). */
export function claimsOf(jwt: string): Record<string, unknown> | null;

/** On the page that frames the dashboard: answers the frame's token asks with
 * `getToken()`, posted to the frame's origin only (`origin`, else the one of `frame.src`).
 * Returns a function that stops answering. */
export function serveTokens(
  frame: HTMLIFrameElement,
  getToken: TokenFunction,
  options?: { origin?: string },
): () => void;

export interface TokenDetail {
  expiresIn: number;
  claims: Record<string, unknown>;
}

export interface EndedDetail {
  /** One of ENDED. */
  code: string;
  /** The claims of the last token the session had (e.g. its `end_user_id`), or undefined. */
  claims: Record<string, unknown> | undefined;
}

export interface UnavailableDetail {
  /** The token function's refusal code, or "unavailable". */
  code: string;
}

/** The events of a session, by type. */
export interface EmbedSessionEventMap {
  token: CustomEvent<TokenDetail>;
  ended: CustomEvent<EndedDetail>;
  unavailable: CustomEvent<UnavailableDetail>;
}

export interface EmbedSession extends EventTarget {
  /** Resolves with the current token, waiting for the first; rejects once ended. */
  ready(): Promise<string>;
  /** `fetch` with `Authorization: Embed <token>`; after a 401 `token_expired`, once more
   * with a fresh token. Resolves with the server's last answer. */
  fetch(input: RequestInfo | URL, init?: RequestInit): Promise<Response>;
  /** The code that ended the session, or undefined while it lives. */
  readonly ended: string | undefined;
  /** Stops the refresh timer and the message listener. */
  close(): void;
  // The typed listeners first, then EventTarget's own, which an EventTarget must keep
  // (lib.dom's elements do the same with their event maps).
  addEventListener<K extends keyof EmbedSessionEventMap>(
    type: K,
    listener: (this: EmbedSession, event: EmbedSessionEventMap[K]) => void,
    options?: boolean | AddEventListenerOptions,
  ): void;
  addEventListener(
    type: string,
    listener: EventListenerOrEventListenerObject | null,
    options?: boolean | AddEventListenerOptions,
  ): void;
  removeEventListener<K extends keyof EmbedSessionEventMap>(
    type: K,
    listener: (this: EmbedSession, event: EmbedSessionEventMap[K]) => void,
    options?: boolean | EventListenerOptions,
  ): void;
  removeEventListener(
    type: string,
    listener: EventListenerOrEventListenerObject | null,
    options?: boolean | EventListenerOptions,
  ): void;
}

/** In the dashboard. Framed: tokens from the parent, accepted only from `parents` (exact
 * origins). With `sizeOf` (pass `document.documentElement`; any element does the same),
 * the page's whole height, margins included, is sent to the parent whenever it changes,
 * and the frame takes it. Without a frame: `getToken`. */
export function connect(
  options:
    | { parents: string[]; sizeOf?: Element; getToken?: undefined }
    | { getToken: TokenFunction },
): EmbedSession;
