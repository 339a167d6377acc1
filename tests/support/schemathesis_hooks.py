"""Schemathesis hooks for tests/test_fuzz.py's command-line run (``SCHEMATHESIS_HOOKS``).

The schema states every rule of a request's shape. Some things that decide a request's
fate are not shape, and no OpenAPI document can say them; these hooks make the
generated data meet them (the last for invalid cases, the others for valid ones), so
that a refusal of valid data, or an acceptance of invalid data, is a real finding:

* ``parent_user_group_id`` must name a group that exists: the hooks name the one the
  test made (``USERGROUPS_FUZZ_PARENT``);
* ``new_user_group_id`` must not be another group's id: the hooks make it unique;
* JSON Schema counts ``60.0`` as an integer; the API, strict about types, does not
  (CONTRACT: integers are integers): the hooks send integral numbers as integers;
* a revocation's ``embed_token`` must be a live token (one the hooks cannot make): such
  a case revokes the test's group instead; a revocation names one axis, ``subtree`` goes
  with ``user_group_id``, and a mint's ``exclusive`` with ``end_user`` (a schema cannot
  say "only with");
* the parent every case names must survive the run: a case naming it as its own
  ``user_group_id`` names another id;
* for an invalid case of an operation whose query string stands in for a missing body,
  the query string is left out (it would make the case valid).
"""

import itertools
import os
from typing import Any

import schemathesis
from schemathesis import GenerationMode

_unique = itertools.count()
INTEGER_FIELDS = ("expires_in",)


def _integers(value: Any) -> Any:
    """``value`` with integral floats written as integers (mapping values, expires_in)."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


#: Operations whose query string stands in for a missing body (CONTRACT section 3).
QUERY_FALLBACK_PATHS = ("/api/user", "/api/user/end-user")
REVOCATION_AXES = ("user_group_id", "end_user_id", "embed_token", "all")


@schemathesis.hook
def map_case(context: Any, case: Any) -> Any:
    meta = case.meta
    if meta is None:
        return case
    if meta.generation.mode is not GenerationMode.POSITIVE:
        missing = not (isinstance(case.body, dict) and case.body)
        if case.path in QUERY_FALLBACK_PATHS and missing and case.query:
            # No body: the query string would stand in for it and make the case valid;
            # without it the case is the invalid one generated.
            case.query = {}
        return case
    body = case.body
    if not isinstance(body, dict):
        return case
    body = dict(body)
    parent = os.environ["USERGROUPS_FUZZ_PARENT"]
    if case.path == "/api/user" and body.get("user_group_id") == parent:
        # Never the parent itself (a value seen in answers may be generated again): a
        # GET of it would feed its id to links that move or delete it.
        body["user_group_id"] = f"{parent}~other"
    if case.path.endswith("/embed-token/revoke"):
        axes = [name for name in REVOCATION_AXES if name in body]
        if "embed_token" in body or not axes:
            body = {"user_group_id": parent}
        else:
            kept = {axes[0]: body[axes[0]]}
            if axes[0] == "user_group_id" and "subtree" in body:
                kept["subtree"] = body["subtree"]
            body = kept
    if body.get("exclusive") and "end_user" not in body:
        body["exclusive"] = False
    if body.get("parent_user_group_id") is not None:
        body["parent_user_group_id"] = parent
    if isinstance(body.get("new_user_group_id"), str):
        body["new_user_group_id"] = f"{body['new_user_group_id'][:200]}~{next(_unique)}"
    for name in INTEGER_FIELDS:
        if name in body:
            body[name] = _integers(body[name])
    if isinstance(body.get("mapping"), dict):
        body["mapping"] = {key: _integers(value) for key, value in body["mapping"].items()}
    case.body = body
    return case
