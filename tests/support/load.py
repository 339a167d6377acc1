"""Load for the fault tests: clients that each own a set of groups and write to them,
keeping a :mod:`ledger <tests.support.ledger>` of what the server told them.

A client works through groups one at a time (ids unique to the run and the client): it
creates one, then runs a few operations on it drawn from ``mix`` (get, rotate, update,
delete, embed), then starts the next. A request whose outcome is unknown (a failed
connection or a 5xx) is retried until it answers: get-or-create and update are
idempotent, a retried rotation tells whether the first attempt committed (200: it had
not; 404: it had, and the new token was never seen), and so does a retried delete (404:
it had).

A get must show the last token and properties the client was told about; an embed token
minted after the last rotation must introspect active, and one minted before it not.
"""

import http.client
import json
import random
import threading
import time

from tests.support.ledger import Call, Chain

REQUEST_TIMEOUT = 10
MAX_RETRIES = 20
STEPS = (2, 6)  # operations per group after its creation, at random in this range
EMBED_PATH = "/api/user/embed-token"
EMBED_INTROSPECT_PATH = "/api/user/embed-token/introspect"


class LoadClient(threading.Thread):
    """One client: ``mix`` weighs the operations after creation (e.g. ``{"rotate": 1}``)."""

    def __init__(self, number, address, key, deadline, t0, run_id, mix, served_by=None):
        super().__init__(name=f"client-{number}", daemon=True)
        self.number, self.address, self.key = number, address, key
        self.deadline, self.t0, self.run_id = deadline, t0, run_id
        self.ops, self.weights = list(mix), list(mix.values())
        self.served_by = served_by  # the response header naming the host, if any
        self.calls: list[Call] = []
        self.chains: list[Chain] = []
        self.errors: list[str] = []  # answers the contract rules out
        self.retries = 0
        self.random = random.Random(number)

    def request(self, op, method, body, path="/api/user", auth=None):
        """One request on a new connection; ``(outcome, payload)``, payload None when the
        outcome is unknown (no answer, a 5xx, or an answer that is not JSON)."""
        start, host = time.monotonic(), ""
        conn = http.client.HTTPConnection(*self.address, timeout=REQUEST_TIMEOUT)
        try:
            conn.request(
                method,
                path,
                body=json.dumps(body) if body is not None else None,
                headers={
                    "Authorization": auth or f"Token {self.key}",
                    "Content-Type": "application/json",
                },
            )
            response = conn.getresponse()
            raw, outcome = response.read(), str(response.status)
            host = response.getheader(self.served_by, "") if self.served_by else ""
            try:
                payload = json.loads(raw) if response.status < 500 else None
            except ValueError:
                outcome, payload = f"{response.status} (not JSON)", None
        except (OSError, http.client.HTTPException) as exc:
            outcome, payload = type(exc).__name__, None
        finally:
            conn.close()
        self.calls.append(Call(op, start - self.t0, time.monotonic() - self.t0, outcome, host))
        return outcome, payload

    def until_answered(self, op, method, body, **kwargs):
        """Send until the answer is known (a 2xx or 4xx); ("unknown", None) if it never is."""
        for attempt in range(MAX_RETRIES):
            outcome, payload = self.request(op, method, body, **kwargs)
            if payload is not None:
                return outcome, payload
            self.retries += 1
            time.sleep(min(0.05 * 2**attempt, 1.0))
        return "unknown", None

    def run(self):
        try:
            n = 0
            while time.monotonic() < self.deadline:
                chain = Chain(f"load-{self.run_id}-{self.number}-{n}")
                n += 1
                self.chains.append(chain)
                self.work_on(chain)
        except Exception as exc:  # reported as a violation
            self.errors.append(f"{self.name}: {exc!r}")

    def expect(self, chain, what, outcome, payload, wanted="200"):
        if outcome not in (wanted, "unknown"):
            self.errors.append(f"{chain.provided_id}: {what} answered {outcome}: {payload}")
        return outcome == wanted

    def work_on(self, chain):
        body = {"user_group_id": chain.provided_id}
        if "update" in self.ops:
            body["properties"] = {"seq": 0}
        outcome, payload = self.until_answered("create", "GET", body)
        if outcome != "200":
            return
        chain.created_seen = True
        chain.tokens.append(payload["user_group"]["token"])
        if "update" in self.ops:
            chain.properties.append(payload["user_group"]["properties"])
        embed_tokens = []  # (token, rotations acknowledged when it was minted)
        for step in range(self.random.randint(*STEPS)):
            if time.monotonic() >= self.deadline or chain.ambiguous_end or chain.unknown_end:
                return
            op = self.random.choices(self.ops, self.weights)[0]
            if op == "delete":
                return self.delete(chain)
            getattr(self, op)(chain, step, embed_tokens)

    def get(self, chain, step, embed_tokens):
        outcome, payload = self.until_answered("get", "GET", {"user_group_id": chain.provided_id})
        if self.expect(chain, "get", outcome, payload) and chain.properties_known:
            group = payload["user_group"]
            if group["token"] != chain.tokens[-1]:
                self.errors.append(f"{chain.provided_id}: get showed a token not the last one")
            if chain.properties and group["properties"] != chain.properties[-1]:
                self.errors.append(f"{chain.provided_id}: get showed old properties")

    def update(self, chain, step, embed_tokens):
        value = {"seq": step + 1}
        chain.properties.append(value)  # it may hold this from now on
        body = {"user_group_id": chain.provided_id, "properties": value}
        outcome, payload = self.until_answered("update", "PUT", body)
        if outcome == "unknown":
            chain.properties_known = False
        self.expect(chain, "update", outcome, payload)

    def rotate(self, chain, step, embed_tokens):
        body = {"current_token": chain.tokens[-1]}
        outcome, payload = self.request("rotate", "POST", body)
        if payload is None:  # unknown: did it commit? Ask again with the same token.
            self.retries += 1
            outcome, payload = self.until_answered("rotate", "POST", body)
            if outcome == "404":
                chain.ambiguous_end = True  # it had committed; its token is lost
                return
            if outcome == "unknown":
                chain.unknown_end = True
                return
        if self.expect(chain, "rotation", outcome, payload):
            chain.tokens.append(payload["user_group"]["token"])

    def delete(self, chain):
        body = {"user_group_id": chain.provided_id}
        outcome, payload = self.request("delete", "DELETE", body)
        if payload is None:
            self.retries += 1
            outcome, payload = self.until_answered("delete", "DELETE", body)
            if outcome == "404":  # the first attempt had committed
                chain.deleted = True
                return
        if outcome == "unknown":
            chain.delete_unknown = True
        elif self.expect(chain, "delete", outcome, payload):
            chain.deleted = True

    def embed(self, chain, step, embed_tokens):
        """Mint an embed token, then check each one minted for the group so far: those
        minted since the last rotation work, older ones are refused."""
        body = {"user_group_id": chain.provided_id, "expires_in": 300}
        outcome, payload = self.until_answered("mint", "POST", body, path=EMBED_PATH)
        if self.expect(chain, "mint", outcome, payload):
            embed_tokens.append((payload["embed_token"], len(chain.tokens)))
        for token, rotations in embed_tokens:
            outcome, payload = self.until_answered(
                "verify", "POST", {"embed_token": token}, path=EMBED_INTROSPECT_PATH
            )
            if not self.expect(chain, "introspection", outcome, payload):
                continue
            if payload["active"] != (rotations == len(chain.tokens)):
                self.errors.append(
                    f"{chain.provided_id}: an embed token minted after {rotations - 1} of"
                    f" {len(chain.tokens) - 1} rotations introspected active={payload['active']}"
                )
