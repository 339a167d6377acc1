"""The ledger of a load run under faults: every call with its outcome, every group as its
client was told about it, and the checks of both against the database afterwards.

Shared by the one-host fault test (.ci/fault_test.py) and the cluster's
(tests/cluster/test_faults.py); the load itself is :mod:`tests.support.load`.

The rule: whatever a client was told with a 2xx must be true in the database (zero lost),
nothing may exist twice or without a client having asked (zero doubled), and a 5xx or a
failed connection may only happen to a request in flight at a fault.
"""

import collections
import json
from dataclasses import dataclass, field

FAULT_WINDOW = 2.0  # seconds after a fault's end in which a request still counts as "during"


@dataclass
class Call:
    op: str
    start: float
    end: float
    outcome: str  # "200", "404", "502", ... or an exception's name
    host: str = ""  # who served it, where the proxy says


@dataclass
class Fault:
    what: str
    start: float
    end: float  # when the broken part was back (its restart done)

    def overlaps(self, call: Call) -> bool:
        return call.end >= self.start and call.start <= self.end + FAULT_WINDOW


@dataclass
class Chain:
    """One group, as its client saw it."""

    provided_id: str
    tokens: list[str] = field(default_factory=list)  # tokens received with a 200, in order
    created_seen: bool = False  # a 200 on get-or-create
    ambiguous_end: bool = False  # a rotation committed without the client seeing its token
    unknown_end: bool = False  # retries ran out: the outcome of the last rotation is unknown
    properties: list = field(default_factory=list)  # values it may hold, the newest last
    properties_known: bool = True  # False while an update's outcome stayed unknown
    deleted: bool = False  # a delete answered 200, or 404 on its retry
    delete_unknown: bool = False


def failed(call: Call) -> bool:
    """No answer from the API: a 5xx or a failed connection."""
    return not call.outcome.startswith(("2", "4"))


def summarize(label: str, calls: list[Call]) -> str:
    bad = [c for c in calls if failed(c)]
    share = 100 * len(bad) / len(calls) if calls else 0.0
    answered = collections.Counter(c.outcome for c in calls)
    what = ", ".join(f"{outcome}×{n}" for outcome, n in sorted(answered.items()))
    return f"  {label}: {len(calls)} requests, {len(bad)} failed ({share:.1f}%): {what}"


def failures_outside(calls: list[Call], faults: list[Fault]) -> list[Call]:
    """Failed calls that no fault was in flight for."""
    return [c for c in calls if failed(c) and not any(f.overlaps(c) for f in faults)]


def check_rotations(chain: Chain, digest: str) -> str | None:
    """What is wrong with ``digest`` as the group's current token digest, or None."""
    from usergroups import crypto  # here: scripts import this module before Django is set up

    rotated_away = {crypto.digest(token) for token in chain.tokens[:-1]}
    if digest in rotated_away:
        return f"{chain.provided_id}: a token rotated away with a 200 is current"
    if chain.ambiguous_end or chain.unknown_end:
        if chain.ambiguous_end and digest == crypto.digest(chain.tokens[-1]):
            return f"{chain.provided_id}: a rotation answered 404, yet undone"
        return None
    if digest != crypto.digest(chain.tokens[-1]):
        return f"{chain.provided_id}: the last token answered 200 is not current"
    return None


def check_stored(chains: list[Chain], stored: dict[str, list[dict]]) -> list[str]:
    """Violations of the ledger by ``stored``: provided id -> rows with ``token_digest`` and
    (when the load updates them) ``properties``, for every group of the run."""
    violations = []
    for chain in chains:
        rows = stored.get(chain.provided_id, [])
        if len(rows) > 1:
            violations.append(f"{chain.provided_id}: {len(rows)} groups stored")
            continue
        if chain.deleted and rows:
            violations.append(f"{chain.provided_id}: deleted with a 200, yet stored")
            continue
        if not chain.created_seen or chain.deleted or (chain.delete_unknown and not rows):
            continue
        if not rows:
            violations.append(f"{chain.provided_id}: told created, not stored")
            continue
        problem = check_rotations(chain, rows[0]["token_digest"])
        if problem:
            violations.append(problem)
        if chain.properties and "properties" in rows[0]:
            value = rows[0]["properties"]
            value = json.loads(value) if isinstance(value, str) else value
            allowed = chain.properties if not chain.properties_known else chain.properties[-1:]
            if value not in allowed:
                violations.append(
                    f"{chain.provided_id}: properties {value} are not the last updated with a"
                    f" 200 ({chain.properties[-1]})"
                )
    unasked = set(stored) - {chain.provided_id for chain in chains}
    if unasked:
        violations.append(f"groups no client asked for: {sorted(unasked)[:5]}")
    return violations
