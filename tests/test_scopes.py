"""API key scopes through the API (contract section 4): every cell of the operation x
scope table, allowed and refused; a refusal is a 403 naming the scope and changes nothing.
"""

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from tests.support.api import assert_error, client_for, send
from tests.support.db_state import database_unchanged
from tests.support.factories import APIKeyFactory, UserGroupFactory
from tests.support.queries import only_reads
from usergroups.models import APIKey, UserGroup, Workspace
from usergroups.scopes import SCOPES

LIST_URL = "/api/user/list"
NEW_ID = "not-yet-a-group"


@dataclass(frozen=True)
class Operation:
    """One row of the table: how to send it, and the scope it needs."""

    name: str
    method: str
    scope: str
    body: Callable[[UserGroup], Any]
    path: str = "/api/user"


OPERATIONS = [
    Operation("get existing", "GET", "read", lambda g: {"user_group_id": g.provided_id}),
    Operation("get creating", "GET", "write", lambda g: {"user_group_id": NEW_ID}),
    Operation("list", "GET", "read", lambda g: b"", path=LIST_URL),
    Operation("update", "PUT", "write", lambda g: {"user_group_id": g.provided_id, "name": "N"}),
    Operation("delete", "DELETE", "write", lambda g: {"user_group_id": g.provided_id}),
    Operation("rotate", "POST", "rotate", lambda g: {"current_token": g.token}),
]
#: The table as the contract gives it, to check OPERATIONS against.
CONTRACT_TABLE = {
    "get existing": "read",
    "get creating": "write",
    "list": "read",
    "update": "write",
    "delete": "write",
    "rotate": "rotate",
}


def key_with(workspace: Workspace, scopes: set[str]) -> APIKey:
    """A key holding ``scopes``, used a moment ago (so a request writes no last_used_at
    and the queries counted are the request's own)."""
    return APIKeyFactory(
        workspace=workspace,
        last_used_at=timezone.now(),
        **{f"scope_{scope}": scope in scopes for scope in SCOPES},
    )


def call(operation: Operation, key: APIKey, group: UserGroup) -> Any:
    return send(client_for(key.key), operation.method, operation.body(group), path=operation.path)


def test_the_table_is_the_contracts():
    assert {op.name: op.scope for op in OPERATIONS} == CONTRACT_TABLE


@pytest.mark.parametrize("held", SCOPES)
@pytest.mark.parametrize("operation", OPERATIONS, ids=lambda op: op.name)
def test_a_key_with_one_scope(operation, held, workspace, group):
    """Each operation with a key holding one scope: allowed iff it is the one it needs."""
    key = key_with(workspace, {held})
    if held == operation.scope:
        response = call(operation, key, group)
        assert response.status_code == 200, response.content
        assert response.json()["success"] == 1
        return
    with database_unchanged():
        response = call(operation, key, group)
    error = assert_error(response, 403, "permission_denied")
    assert f"'{operation.scope}'" in error["message"]
    assert not UserGroup.objects.filter(provided_id=NEW_ID).exists()


@pytest.mark.parametrize("operation", OPERATIONS, ids=lambda op: op.name)
def test_a_key_with_every_scope_but_the_needed_one_is_refused(operation, workspace, group):
    key = key_with(workspace, set(SCOPES) - {operation.scope})
    with database_unchanged():
        response = call(operation, key, group)
    error = assert_error(response, 403, "permission_denied")
    assert f"'{operation.scope}'" in error["message"]
    # The message names the missing scope and nothing else of the table.
    assert not any(f"'{other}'" in error["message"] for other in SCOPES if other != operation.scope)


@pytest.mark.parametrize("operation", OPERATIONS, ids=lambda op: op.name)
def test_a_key_with_every_scope_is_allowed(operation, api_key, group):
    response = call(operation, api_key, group)
    assert response.status_code == 200, response.content


def test_get_of_an_unknown_id_without_write_creates_nothing(workspace):
    key = key_with(workspace, {"read", "rotate", "embed"})
    with database_unchanged():
        response = send(client_for(key.key), "GET", {"user_group_id": NEW_ID})
    assert "'write'" in assert_error(response, 403, "permission_denied")["message"]
    # The same id with write: created now, so the refusal had made nothing.
    created = send(client_for(key_with(workspace, {"write"}).key), "GET", {"user_group_id": NEW_ID})
    assert created.status_code == 200 and created.json()["new_user_group"] is True


def test_a_write_only_key_creates_but_cannot_read_back(workspace):
    """write lets GET create a group; reading it again, as an existing one, needs read."""
    client = client_for(key_with(workspace, {"write"}).key)
    assert send(client, "GET", {"user_group_id": "w"}).json()["new_user_group"] is True
    error = assert_error(send(client, "GET", {"user_group_id": "w"}), 403, "permission_denied")
    assert "'read'" in error["message"]


# --- where the 403 comes: after authentication; for GET after validation; else first -----


@pytest.mark.parametrize("operation", OPERATIONS, ids=lambda op: op.name)
def test_authentication_comes_first(operation, group, anon_api_client):
    response = send(anon_api_client, operation.method, operation.body(group), path=operation.path)
    assert_error(response, 401, "not_authenticated")


def test_get_validates_before_the_scope_check(workspace):
    key = key_with(workspace, {"embed"})
    response = send(client_for(key.key), "GET", {"user_group_id": ""})
    assert_error(response, 400, "invalid", fields=["user_group_id"])


@pytest.mark.parametrize(
    "method, scope", [("POST", "rotate"), ("PUT", "write"), ("DELETE", "write")]
)
@pytest.mark.parametrize("body", [b"{not json", b'{"user_group_id": 7}', b"[]"])
def test_other_operations_refuse_before_reading_the_body(workspace, method, scope, body):
    key = key_with(workspace, set(SCOPES) - {scope})
    with CaptureQueriesContext(connection) as queries:
        response = send(client_for(key.key), method, body)
    assert f"'{scope}'" in assert_error(response, 403, "permission_denied")["message"]
    assert len(queries) == 1, [q["sql"] for q in queries]  # the key lookup, nothing more


def test_the_list_refuses_before_reading_the_query(workspace):
    key = key_with(workspace, {"write", "rotate", "embed"})
    with CaptureQueriesContext(connection) as queries:
        response = send(client_for(key.key), "GET", path=f"{LIST_URL}?page=0")
    assert "'read'" in assert_error(response, 403, "permission_denied")["message"]
    assert len(queries) == 1


# --- what a scope check costs --------------------------------------------------------------


def test_a_refused_creation_costs_the_key_and_group_lookups_only(
    workspace, django_assert_num_queries
):
    key = key_with(workspace, {"read"})
    with django_assert_num_queries(2) as queries:
        response = send(client_for(key.key), "GET", {"user_group_id": NEW_ID})
    assert response.status_code == 403
    assert only_reads(queries.captured_queries)


def test_a_read_only_key_reads_an_existing_group_in_two_queries(
    workspace, django_assert_max_num_queries
):
    key = key_with(workspace, {"read"})
    group = UserGroupFactory(workspace=workspace)
    client = client_for(key.key)
    with django_assert_max_num_queries(2):
        response = send(client, "GET", {"user_group_id": group.provided_id})
    assert response.status_code == 200 and response.json()["new_user_group"] is False
