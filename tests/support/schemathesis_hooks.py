"""Schemathesis hooks for tests/test_fuzz.py's command-line run (``SCHEMATHESIS_HOOKS``).

The schema states every rule of a request's shape. Three things that decide a valid
request's fate are not shape, and no OpenAPI document can say them; for valid
(positive) cases only, these hooks make the generated data meet them, so that a
refusal of valid data is a real finding:

* ``parent_user_group_id`` must name a group that exists: the hooks name the one the
  test made (``USERGROUPS_FUZZ_PARENT``);
* ``new_user_group_id`` must not be another group's id: the hooks make it unique;
* JSON Schema counts ``60.0`` as an integer; the API, strict about types, does not
  (CONTRACT: integers are integers): the hooks send integral numbers as integers;
* a revocation's ``embed_token`` must be a live token (one the hooks cannot make): such
  a case revokes the test's group instead; ``subtree`` goes with ``user_group_id``, and
  a mint's ``exclusive`` with ``end_user`` (OpenAPI 3.0 cannot say "only with").
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


@schemathesis.hook
def map_case(context: Any, case: Any) -> Any:
    meta = case.meta
    if meta is None or meta.generation.mode is not GenerationMode.POSITIVE:
        return case
    body = case.body
    if not isinstance(body, dict):
        return case
    body = dict(body)
    if case.path.endswith("/embed-token/revoke"):
        if "embed_token" in body:
            body = {"user_group_id": os.environ["USERGROUPS_FUZZ_PARENT"]}
        if "user_group_id" not in body:
            body.pop("subtree", None)
    if body.get("exclusive") and "end_user" not in body:
        body["exclusive"] = False
    if body.get("parent_user_group_id") is not None:
        body["parent_user_group_id"] = os.environ["USERGROUPS_FUZZ_PARENT"]
    if isinstance(body.get("new_user_group_id"), str):
        body["new_user_group_id"] = f"{body['new_user_group_id'][:200]}~{next(_unique)}"
    for name in INTEGER_FIELDS:
        if name in body:
            body[name] = _integers(body[name])
    if isinstance(body.get("mapping"), dict):
        body["mapping"] = {key: _integers(value) for key, value in body["mapping"].items()}
    case.body = body
    return case
