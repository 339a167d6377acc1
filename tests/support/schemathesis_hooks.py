"""Schemathesis hooks for tests/test_fuzz.py's command-line run (``SCHEMATHESIS_HOOKS``).

The schema states every rule of a request's shape, those across fields included (a
revocation's one axis, ``subtree`` only with ``user_group_id``, ``exclusive`` only with
``end_user``). Some things that decide a request's fate are not shape, and no OpenAPI
document can say them; these hooks make the generated data meet them (for valid cases),
so that the run reaches what the API does with data it takes, and a refusal of valid
data, or an acceptance of invalid data, is a real finding. (A run without hooks takes
the repository's ``schemathesis.toml``, which says what the API answers instead:
tests/test_schemathesis.py.)

* ``parent_user_group_id`` must name a group that exists (else 404): the hooks name the
  one the test made (``USERGROUPS_FUZZ_PARENT``), so that creates under a parent are
  made, not refused;
* ``new_user_group_id`` must not be another group's id (else 409): the hooks make it
  unique, so that renames are made;
* a revocation's ``embed_token`` must be a live token (one the hooks cannot make; else
  404): such a case revokes the test's group instead;
* the parent every case names must survive the run: a case naming it as its own
  ``user_group_id`` names another id;
* an operation whose query string stands in for a body not sent needs its id in one of
  the two (a rule across locations): a valid case without a body gets the query string
  of one.
* the audit list's ``cursor`` is one the server made (``next_cursor``), and ``until``
  may not be before ``since``: the hooks leave the cursor out and put the two in order;
* a webhook's ``url`` must resolve to a public address (the server resolves it): the
  hooks give a public address literal, keeping the generated path;
* a rotation's ``current_token`` must be a group's live token and an update's
  ``user_group_id`` a group's id, which random strings never are (only the stateful
  phase's links reached them, and a warning then hung on that phase's course): valid
  rotations, updates and mints name the test's target group (``USERGROUPS_FUZZ_TARGET``),
  whose token and id the hooks follow through the answers.
"""

import itertools
import os
from datetime import UTC, datetime
from typing import Any

import schemathesis
from schemathesis import GenerationMode
from schemathesis.core import NOT_SET

_unique = itertools.count()
# A globally routable address (not a documentation range): nothing is sent there, as the
# fuzzed site runs no task worker.
PUBLIC_WEBHOOK_ORIGIN = "https://203.0.114.10"


#: Operations whose query string stands in for a body not sent (CONTRACT section 3), and
#: the field it must then give.
QUERY_FALLBACK = {"/api/user": "user_group_id", "/api/user/end-user": "end_user_id"}

#: The target group as the server last answered it: its id and its token.
_target: dict[str, str] = {}


def _target_group() -> dict[str, str]:
    if not _target:
        _target.update(
            user_group_id=os.environ["USERGROUPS_FUZZ_TARGET"],
            current_token=os.environ["USERGROUPS_FUZZ_TARGET_TOKEN"],
        )
    return _target


def _names_target(case: Any) -> bool:
    return case.path in ("/api/user", "/api/user/embed-token") and case.method in ("POST", "PUT")


@schemathesis.hook
def before_call(context: Any, case: Any, kwargs: Any) -> None:
    """A valid rotation, update or mint names the target as it is now (not when the case
    was made: the coverage phase makes all its cases first)."""
    meta = case.meta
    if meta is None or meta.generation.mode is not GenerationMode.POSITIVE:
        return
    if _names_target(case) and isinstance(case.body, dict):
        # Whichever way the body names a group (the schema's oneOf), it names the target.
        for field, value in _target_group().items():
            if field in case.body:
                case.body[field] = value


@schemathesis.hook
def after_call(context: Any, case: Any, response: Any) -> None:
    """Follow the target group through a rotation or an update that named it."""
    if not _names_target(case) or response.status_code != 200:
        return
    group = response.json().get("user_group") or {}
    named = case.body if isinstance(case.body, dict) else {}
    target = _target_group()
    if target["current_token"] == named.get("current_token") or (
        target["user_group_id"] == named.get("user_group_id")
    ):
        for field, answer in (("user_group_id", "provided_id"), ("current_token", "token")):
            if isinstance(group.get(answer), str):
                target[field] = group[answer]


@schemathesis.hook
def map_case(context: Any, case: Any) -> Any:
    meta = case.meta
    if meta is None:
        return case
    if meta.generation.mode is not GenerationMode.POSITIVE:
        return case
    if case.path in QUERY_FALLBACK and case.method == "GET" and case.body is NOT_SET:
        case.query = {QUERY_FALLBACK[case.path]: f"fuzz-query-{next(_unique)}"}
        return case
    if isinstance(case.query, dict) and ("cursor" in case.query or "until" in case.query):
        case.query = _audit_query(case.query)
    body = case.body
    if not isinstance(body, dict):
        return case
    body = dict(body)
    parent = os.environ["USERGROUPS_FUZZ_PARENT"]
    if case.path == "/api/user" and body.get("user_group_id") == parent:
        # Never the parent itself (a value seen in answers may be generated again): a
        # GET of it would feed its id to links that move or delete it.
        body["user_group_id"] = f"{parent}~other"
    if case.path.endswith("/embed-token/revoke") and "embed_token" in body:
        body = {"user_group_id": parent}
    if body.get("parent_user_group_id") is not None:
        body["parent_user_group_id"] = parent
    if isinstance(body.get("url"), str) and "events" in body:
        path = body["url"].split("://", 1)[-1].partition("/")[2]
        body["url"] = f"{PUBLIC_WEBHOOK_ORIGIN}/{path}"[:2000]
    if isinstance(body.get("new_user_group_id"), str):
        body["new_user_group_id"] = f"{body['new_user_group_id'][:200]}~{next(_unique)}"
    case.body = body
    return case


def _audit_query(query: dict[str, Any]) -> dict[str, Any]:
    query = {name: value for name, value in query.items() if name != "cursor"}
    since, until = query.get("since"), query.get("until")
    if isinstance(since, str) and isinstance(until, str):
        try:
            if _moment(until) < _moment(since):
                query["since"], query["until"] = until, since
        except ValueError:  # not a time the API takes: a 400 either way
            pass
    return query


def _moment(text: str) -> datetime:
    """As the server reads it: a time without an offset is UTC (TIME_ZONE)."""
    moment = datetime.fromisoformat(text)
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)
