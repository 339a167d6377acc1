"""End users through the API (CONTRACT section 7): CRUD, every bad input, scopes,
tenancy, query counts, signals, and the service's create-or-update."""

import json
from unittest import mock

import pytest
from django.db import IntegrityError
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.api import assert_error, client_for, send, status_and_body
from tests.support.concurrency import THREADS, run_together
from tests.support.factories import APIKeyFactory
from tests.support.queries import WRITES, statements
from usergroups.models import EndUser
from usergroups.services import end_users
from usergroups.signals import (
    end_user_created,
    end_user_deleted,
    end_user_tokens_revoked,
    end_user_updated,
)

URL = "/api/user/end-user"
LIST_URL = "/api/user/end-user/list"
END_USER_KEYS = {
    "end_user_id",
    "display_name",
    "attributes",
    "disabled",
    "created_at",
    "updated_at",
}


def put(client, body, **extra):
    return send(client, "PUT", body, path=URL, **extra)


def get(client, body=b"", path=URL, **extra):
    return send(client, "GET", body, path=path, **extra)


def delete(client, body, **extra):
    return send(client, "DELETE", body, path=URL, **extra)


def listed(client, query=""):
    return get(client, path=f"{LIST_URL}?{query}")


@pytest.fixture
def person(api_client):
    body = {"end_user_id": "ada", "display_name": "Ada", "attributes": {"region": "EMEA"}}
    response = put(api_client, body)
    assert response.status_code == 200, response.content
    return response.json()["end_user"]


def scoped_client(workspace, *granted):
    key = APIKeyFactory.create(workspace=workspace)
    key.set_scopes(set(granted))
    key.save()
    return client_for(key.key)


class TestPut:
    def test_creates_with_defaults(self, api_client, workspace):
        response = put(api_client, {"end_user_id": "ada"})
        assert response.status_code == 200, response.content
        body = response.json()
        assert body["success"] == 1 and body["created"] is True
        end_user = body["end_user"]
        assert set(end_user) == END_USER_KEYS
        assert end_user["end_user_id"] == "ada"
        assert end_user["display_name"] == "ada"  # default: the id
        assert end_user["attributes"] == {}
        assert end_user["disabled"] is False
        assert end_user["created_at"] == end_user["updated_at"]
        row = EndUser.objects.get()
        assert row.workspace == workspace and row.tokens_revoked_at is None

    def test_changes_only_the_fields_given(self, api_client, person):
        response = put(api_client, {"end_user_id": "ada", "display_name": "Ada L."})
        body = response.json()
        assert body["created"] is False
        assert body["end_user"]["display_name"] == "Ada L."
        assert body["end_user"]["attributes"] == {"region": "EMEA"}  # absent: kept
        assert body["end_user"]["created_at"] == person["created_at"]
        assert body["end_user"]["updated_at"] > person["updated_at"]
        response = put(api_client, {"end_user_id": "ada", "attributes": {"plan": "pro"}})
        assert response.json()["end_user"]["attributes"] == {"plan": "pro"}  # replaced
        assert response.json()["end_user"]["display_name"] == "Ada L."
        assert EndUser.objects.count() == 1

    def test_unchanged_put_writes_nothing(self, api_client, person):
        response = put(api_client, {"end_user_id": "ada", "display_name": "Ada"})
        assert response.json() == {"success": 1, "created": False, "end_user": person}

    def test_attributes_read_back_as_written(self, api_client):
        attributes = {"n": 1.5, "big": 1e300, "neg": -0.0, "deep": {"a": [1, {"b": None}]}}
        put(api_client, {"end_user_id": "ada", "attributes": attributes})
        stored = get(api_client, {"end_user_id": "ada"}).json()["end_user"]["attributes"]
        assert json.dumps(stored) == json.dumps(attributes)

    @pytest.mark.parametrize(
        ("before", "after"),
        [(1, 1.0), (1, True), (0, False), ({"a": 1, "b": 2}, {"a": 1, "b": 3})],
        ids=["int-float", "int-true", "zero-false", "nested"],
    )
    def test_values_python_calls_equal_are_changes(self, api_client, before, after):
        put(api_client, {"end_user_id": "ada", "attributes": {"x": before}})
        put(api_client, {"end_user_id": "ada", "attributes": {"x": after}})
        stored = get(api_client, {"end_user_id": "ada"}).json()["end_user"]["attributes"]
        assert json.dumps(stored) == json.dumps({"x": after})

    def test_key_order_alone_is_no_change(self, api_client, person, django_assert_num_queries):
        with django_assert_num_queries(2) as queries:  # the key's lookup, the person's read
            put(api_client, {"end_user_id": "ada", "attributes": {"region": "EMEA"}})
        assert statements(queries.captured_queries, WRITES) == []

    def test_disabling_revokes_and_enabling_keeps_the_revocation(self, api_client, person):
        body = put(api_client, {"end_user_id": "ada", "disabled": True}).json()
        assert body["end_user"]["disabled"] is True
        revoked_at = EndUser.objects.get().tokens_revoked_at
        assert revoked_at is not None
        put(api_client, {"end_user_id": "ada", "disabled": True})  # unchanged: no write
        assert EndUser.objects.get().tokens_revoked_at == revoked_at
        body = put(api_client, {"end_user_id": "ada", "disabled": False}).json()
        assert body["end_user"]["disabled"] is False
        assert EndUser.objects.get().tokens_revoked_at == revoked_at

    def test_created_disabled(self, api_client):
        body = put(api_client, {"end_user_id": "ada", "disabled": True}).json()
        assert body["created"] is True and body["end_user"]["disabled"] is True

    def test_empty_display_name_is_kept(self, api_client):
        body = put(api_client, {"end_user_id": "ada", "display_name": ""}).json()
        assert body["end_user"]["display_name"] == ""

    def test_ids_are_exact(self, api_client):
        for end_user_id in ["Ada", "ada", "ada ", "ädá"]:
            assert put(api_client, {"end_user_id": end_user_id}).json()["created"] is True
        assert sorted(EndUser.objects.values_list("end_user_id", flat=True)) == sorted(
            ["Ada", "ada", "ada ", "ädá"]
        )

    def test_trailing_slash(self, api_client):
        response = send(api_client, "PUT", {"end_user_id": "ada"}, path=URL + "/")
        assert response.status_code == 200


class TestGet:
    def test_by_body(self, api_client, person):
        response = get(api_client, {"end_user_id": "ada"})
        assert response.status_code == 200
        assert response.json() == {"success": 1, "end_user": person}

    def test_by_query_string(self, api_client, person):
        response = get(api_client, path=f"{URL}?end_user_id=ada")
        assert response.json() == {"success": 1, "end_user": person}

    def test_an_empty_object_is_a_body_and_the_query_string_is_not_read(self, api_client, person):
        response = get(api_client, {}, path=f"{URL}?end_user_id=ada")
        assert_error(response, 400, "invalid", ["end_user_id"])

    def test_query_string_is_strict_utf8(self, api_client, person):
        response = get(api_client, path=f"{URL}?end_user_id=ad%E9")
        assert_error(response, 400, "invalid", ["end_user_id"])

    def test_unknown_is_404(self, api_client):
        assert_error(get(api_client, {"end_user_id": "nobody"}), 404, "not_found")

    def test_get_never_creates(self, api_client):
        get(api_client, {"end_user_id": "nobody", "display_name": "X"})
        assert not EndUser.objects.exists()


class TestDelete:
    def test_deletes(self, api_client, person):
        response = delete(api_client, {"end_user_id": "ada"})
        assert response.status_code == 200
        assert response.json() == {"success": 1, "end_user": {"end_user_id": "ada"}}
        assert not EndUser.objects.exists()
        assert_error(get(api_client, {"end_user_id": "ada"}), 404, "not_found")

    def test_unknown_is_404(self, api_client):
        assert_error(delete(api_client, {"end_user_id": "nobody"}), 404, "not_found")

    def test_recreated_is_a_new_person(self, api_client, person):
        delete(api_client, {"end_user_id": "ada"})
        body = put(api_client, {"end_user_id": "ada"}).json()
        assert body["created"] is True
        assert body["end_user"]["attributes"] == {}
        assert body["end_user"]["created_at"] > person["created_at"]


class TestList:
    def test_ordered_by_id_in_code_point_order(self, api_client):
        ids = ["b", "B", "a", "é", "Z", "a-2", "a_1", "z"]
        for end_user_id in ids:
            put(api_client, {"end_user_id": end_user_id})
        body = listed(api_client).json()
        assert body["success"] == 1
        assert body["total_count"] == len(ids) and body["page"] == 1 and body["limit"] == 100
        assert [u["end_user_id"] for u in body["end_users"]] == sorted(ids)
        assert set(body["end_users"][0]) == END_USER_KEYS

    def test_pages(self, api_client):
        for n in range(5):
            put(api_client, {"end_user_id": f"user-{n}"})
        body = listed(api_client, "page=2&limit=2").json()
        assert body["total_count"] == 5 and body["page"] == 2 and body["limit"] == 2
        assert [u["end_user_id"] for u in body["end_users"]] == ["user-2", "user-3"]
        assert listed(api_client, "page=4&limit=2").json()["end_users"] == []

    def test_prefix_is_exact(self, api_client):
        for end_user_id in ["acme-1", "Acme-2", "acme-3", "other"]:
            put(api_client, {"end_user_id": end_user_id})
        body = listed(api_client, "end_user_id_prefix=acme").json()
        assert body["total_count"] == 2
        assert [u["end_user_id"] for u in body["end_users"]] == ["acme-1", "acme-3"]

    @pytest.mark.parametrize(
        ("query", "field"),
        [
            ("page=0", "page"),
            ("page=x", "page"),
            ("limit=0", "limit"),
            ("limit=501", "limit"),
            ("limit=1.5", "limit"),
            ("end_user_id_prefix=a%00", "end_user_id_prefix"),
            ("end_user_id_prefix=%FF", "end_user_id_prefix"),
        ],
    )
    def test_bad_query(self, api_client, query, field):
        assert_error(listed(api_client, query), 400, "invalid", [field])

    def test_only_get(self, api_client):
        response = send(api_client, "POST", {}, path=LIST_URL)
        assert_error(response, 405, "method_not_allowed")
        assert response["Allow"] == "GET"


LONG = "x" * 256
DEEP: dict = {}
_node = DEEP
for _level in range(32):
    _node["a"] = {}
    _node = _node["a"]  # 33 levels in all


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "end_user_id"),
        ({"end_user_id": ""}, "end_user_id"),
        ({"end_user_id": 12}, "end_user_id"),
        ({"end_user_id": None}, "end_user_id"),
        ({"end_user_id": ["ada"]}, "end_user_id"),
        ({"end_user_id": LONG}, "end_user_id"),
        ({"end_user_id": "a\x00b"}, "end_user_id"),
        ({"end_user_id": "ada", "display_name": LONG}, "display_name"),
        ({"end_user_id": "ada", "display_name": 5}, "display_name"),
        ({"end_user_id": "ada", "display_name": None}, "display_name"),
        ({"end_user_id": "ada", "display_name": "a\x00"}, "display_name"),
        ({"end_user_id": "ada", "attributes": []}, "attributes"),
        ({"end_user_id": "ada", "attributes": "{}"}, "attributes"),
        ({"end_user_id": "ada", "attributes": None}, "attributes"),
        ({"end_user_id": "ada", "attributes": {"a": "x" * 65536}}, "attributes"),
        ({"end_user_id": "ada", "attributes": {"a\x00": 1}}, "attributes"),
        ({"end_user_id": "ada", "disabled": "true"}, "disabled"),
        ({"end_user_id": "ada", "disabled": 1}, "disabled"),
        ({"end_user_id": "ada", "disabled": None}, "disabled"),
    ],
)
def test_bad_put_is_refused_and_changes_nothing(api_client, body, field):
    assert_error(put(api_client, body), 400, "invalid", [field])
    assert not EndUser.objects.exists()


def test_attributes_too_deep_are_refused(api_client):
    """33 levels: the body (one more) is over the parser's depth bound, as for properties."""
    assert_error(put(api_client, {"end_user_id": "ada", "attributes": DEEP}), 400, "parse_error")
    assert not EndUser.objects.exists()


def test_lone_surrogate_is_refused(api_client):
    response = put(api_client, b'{"end_user_id": "a\\ud800"}')
    assert_error(response, 400, "invalid", ["end_user_id"])


def test_attributes_at_the_limits_are_taken(api_client):
    shallow: dict = {}
    node = shallow
    for _ in range(31):
        node["a"] = {}
        node = node["a"]  # 32 levels
    assert put(api_client, {"end_user_id": "deep", "attributes": shallow}).status_code == 200
    big = {"a": "x" * (65536 - len('{"a":""}'))}
    assert put(api_client, {"end_user_id": "big", "attributes": big}).status_code == 200


@pytest.mark.parametrize("method", ["GET", "DELETE"])
@pytest.mark.parametrize(
    "body", [{}, {"end_user_id": ""}, {"end_user_id": 1}, {"end_user_id": LONG}]
)
def test_bad_id_of_get_and_delete(api_client, person, method, body):
    assert_error(send(api_client, method, body, path=URL), 400, "invalid", ["end_user_id"])
    assert EndUser.objects.count() == 1


@pytest.mark.parametrize(
    "raw", [b"{", b"[]", b'"ada"', b'{"end_user_id": NaN}', b'{"end_user_id": "a"} x']
)
@pytest.mark.parametrize("method", ["PUT", "GET", "DELETE"])
def test_malformed_json_is_a_parse_error(api_client, method, raw):
    assert_error(send(api_client, method, raw, path=URL), 400, "parse_error")
    assert not EndUser.objects.exists()


def test_not_json_is_415(api_client):
    response = send(api_client, "PUT", b"end_user_id=ada", path=URL, content_type="text/plain")
    assert_error(response, 415, "unsupported_media_type")


@pytest.mark.parametrize("method", ["POST", "PATCH", "OPTIONS"])
def test_other_methods_are_405(api_client, method):
    response = send(api_client, method, {"end_user_id": "ada"}, path=URL)
    assert_error(response, 405, "method_not_allowed")
    assert set(response["Allow"].replace(" ", "").split(",")) == {"GET", "PUT", "DELETE"}


class TestScopes:
    @pytest.mark.parametrize(
        ("method", "path", "body"),
        [
            ("PUT", URL, {"end_user_id": "ada", "display_name": "Changed"}),
            ("DELETE", URL, {"end_user_id": "ada"}),
        ],
    )
    def test_writes_need_write(self, workspace, person, method, path, body):
        client = scoped_client(workspace, "read", "rotate", "embed")
        error = assert_error(send(client, method, body, path=path), 403, "permission_denied")
        assert "'write'" in error["message"]
        assert EndUser.objects.get().display_name == "Ada"

    def test_scope_is_checked_before_the_body_is_read(self, workspace):
        client = scoped_client(workspace, "read")
        assert_error(send(client, "PUT", b"{", path=URL), 403, "permission_denied")

    def test_put_of_a_new_person_needs_write(self, workspace):
        client = scoped_client(workspace, "read")
        assert_error(put(client, {"end_user_id": "new"}), 403, "permission_denied")
        assert not EndUser.objects.exists()

    @pytest.mark.parametrize("path", [f"{URL}?end_user_id=ada", LIST_URL])
    def test_reads_need_read(self, workspace, person, path):
        client = scoped_client(workspace, "write", "rotate", "embed")
        error = assert_error(get(client, path=path), 403, "permission_denied")
        assert "'read'" in error["message"]

    def test_read_and_write_keys_do_their_part(self, workspace, person):
        reader, writer = scoped_client(workspace, "read"), scoped_client(workspace, "write")
        assert get(reader, {"end_user_id": "ada"}).status_code == 200
        assert listed(reader).status_code == 200
        assert put(writer, {"end_user_id": "ada", "display_name": "B"}).status_code == 200
        assert delete(writer, {"end_user_id": "ada"}).status_code == 200

    @pytest.mark.parametrize(
        ("method", "path"), [("PUT", URL), ("GET", URL), ("DELETE", URL), ("GET", LIST_URL)]
    )
    def test_no_key_is_401(self, anon_api_client, db, method, path):
        response = send(anon_api_client, method, {"end_user_id": "ada"}, path=path)
        assert_error(response, 401, "not_authenticated")
        assert response["WWW-Authenticate"] == "Token"
        assert not EndUser.objects.exists()

    def test_unknown_key_is_401(self, db):
        client = client_for("ugk_" + "x" * 40)
        assert_error(put(client, {"end_user_id": "ada"}), 401, "authentication_failed")
        assert not EndUser.objects.exists()


class TestTenancy:
    def test_one_id_in_two_workspaces_is_two_people(
        self, api_client, other_api_client, person, workspace, other_workspace
    ):
        assert_error(get(other_api_client, {"end_user_id": "ada"}), 404, "not_found")
        assert listed(other_api_client).json()["end_users"] == []
        assert_error(delete(other_api_client, {"end_user_id": "ada"}), 404, "not_found")
        body = put(other_api_client, {"end_user_id": "ada", "display_name": "Other Ada"}).json()
        assert body["created"] is True and body["end_user"]["attributes"] == {}
        assert get(api_client, {"end_user_id": "ada"}).json()["end_user"] == person
        assert EndUser.objects.get(workspace=workspace).display_name == "Ada"
        assert EndUser.objects.get(workspace=other_workspace).display_name == "Other Ada"
        delete(other_api_client, {"end_user_id": "ada"})
        assert get(api_client, {"end_user_id": "ada"}).status_code == 200
        assert listed(api_client).json()["total_count"] == 1


class TestQueryCounts:
    def test_get_is_one_query_after_the_key(
        self, recently_used_key, api_client, person, django_assert_num_queries
    ):
        with django_assert_num_queries(2) as queries:
            assert get(api_client, {"end_user_id": "ada"}).status_code == 200
        assert statements(queries.captured_queries, WRITES) == []

    def test_unchanged_put_reads_once_and_writes_nothing(
        self, recently_used_key, api_client, person, django_assert_num_queries
    ):
        body = {"end_user_id": "ada", "display_name": "Ada", "attributes": {"region": "EMEA"}}
        with django_assert_num_queries(2) as queries:
            assert put(api_client, {**body, "disabled": False}).json()["created"] is False
        assert statements(queries.captured_queries, WRITES) == []

    def test_changed_put_writes_one_row_and_its_event(
        self, recently_used_key, api_client, person, django_assert_max_num_queries
    ):
        # The key, the read, then the locked read, the update, its audit event and the
        # webhooks that may receive it (in a savepoint here).
        with django_assert_max_num_queries(8) as queries:
            put(api_client, {"end_user_id": "ada", "display_name": "Ada L."})
        update, event = statements(queries.captured_queries, ("UPDATE", "INSERT", "DELETE"))
        assert "display_name" in update and "usergroups_auditevent" in event

    def test_list_is_two_queries_after_the_key(
        self, recently_used_key, api_client, person, django_assert_num_queries
    ):
        with django_assert_num_queries(3):
            assert listed(api_client).json()["total_count"] == 1


@pytest.fixture
def received():
    """``(signal name, end_user_id)`` of every end-user signal, in order."""
    events = []
    signals = {
        "created": end_user_created,
        "updated": end_user_updated,
        "deleted": end_user_deleted,
        "tokens_revoked": end_user_tokens_revoked,
    }
    receivers = {}
    for name, signal in signals.items():

        def receiver(sender, end_user, name=name, **kwargs):
            assert sender is EndUser and set(kwargs) == {"signal"}
            events.append((name, end_user.end_user_id, end_user.display_name))

        receivers[name] = receiver
        signal.connect(receiver)
    yield events
    for name, signal in signals.items():
        signal.disconnect(receivers[name])


class TestSignals:
    def test_sent_after_commit_once_per_change(
        self, api_client, received, django_capture_on_commit_callbacks
    ):
        with django_capture_on_commit_callbacks() as callbacks:
            put(api_client, {"end_user_id": "ada", "display_name": "Ada"})
            assert received == []  # nothing before the commit
        for callback in callbacks:
            callback()
        with django_capture_on_commit_callbacks(execute=True):
            put(api_client, {"end_user_id": "ada", "display_name": "Ada"})  # unchanged
            get(api_client, {"end_user_id": "ada"})
            listed(api_client)
            put(api_client, {"end_user_id": "ada", "display_name": "Ada L."})
            put(api_client, {"end_user_id": "ada", "disabled": True})
            delete(api_client, {"end_user_id": "ada"})
        assert received == [
            ("created", "ada", "Ada"),
            ("updated", "ada", "Ada L."),
            ("updated", "ada", "Ada L."),
            ("deleted", "ada", "Ada L."),
        ]

    def test_refused_requests_send_nothing(
        self, api_client, person, received, django_capture_on_commit_callbacks
    ):
        with django_capture_on_commit_callbacks(execute=True):
            put(api_client, {"end_user_id": "ada", "disabled": "yes"})
            delete(api_client, {"end_user_id": "nobody"})
        assert received == []


class TestService:
    def test_revoke_tokens_stamps_the_person_only(
        self, workspace, received, django_capture_on_commit_callbacks
    ):
        record, _created = end_users.put_end_user(workspace.pk, "ada", {})
        with django_capture_on_commit_callbacks(execute=True):
            revoked = end_users.revoke_tokens(workspace.pk, "ada")
        assert revoked is not None and revoked.tokens_revoked_at is not None
        assert revoked.updated_at == record.updated_at  # the person did not change
        assert EndUser.objects.get().tokens_revoked_at == revoked.tokens_revoked_at
        assert received == [("tokens_revoked", "ada", "ada")]
        assert end_users.revoke_tokens(workspace.pk, "nobody") is None

    def test_disable(self, workspace):
        end_users.put_end_user(workspace.pk, "ada", {})
        disabled = end_users.disable_end_user(workspace.pk, "ada")
        assert disabled is not None and disabled.disabled
        assert disabled.tokens_revoked_at == disabled.updated_at
        assert end_users.disable_end_user(workspace.pk, "nobody") is None

    def test_update_never_creates(self, workspace):
        assert end_users.update_end_user(workspace.pk, "ada", {"disabled": True}) is None
        assert not EndUser.objects.exists()

    def test_unknown_fields_are_a_programming_error(self, workspace):
        with pytest.raises(ValueError, match="end_user_id"):
            end_users.put_end_user(workspace.pk, "ada", {"end_user_id": "other"})

    def test_an_insert_failing_without_a_winner_raises_its_error(self, workspace):
        """The insert meets the constraint, yet no row is there to change, every time:
        the database's error, not a made-up answer."""
        error = IntegrityError("refused")
        with (
            mock.patch.object(end_users, "_create", side_effect=error),
            mock.patch.object(end_users, "_update", return_value=None),
            pytest.raises(IntegrityError, match="refused"),
        ):
            end_users.put_end_user(workspace.pk, "ada", {})

    def test_a_create_that_loses_a_race_changes_the_winner(self, workspace):
        """Another process creates the person between this one's read and its insert:
        the insert meets the unique constraint and the winner's row gets the changes."""
        real_create = end_users._create  # noqa: SLF001

        def winner_first(workspace_id, end_user_id, changes):
            EndUser.objects.create(
                workspace_id=workspace_id, end_user_id=end_user_id, display_name="Winner"
            )
            return real_create(workspace_id, end_user_id, changes)

        with mock.patch.object(end_users, "_create", winner_first):
            record, created = end_users.put_end_user(workspace.pk, "ada", {"attributes": {"a": 1}})
        assert created is False
        assert record.display_name == "Winner" and record.attributes == {"a": 1}
        assert EndUser.objects.count() == 1


@pytest.mark.django_db(transaction=True)
class TestRaces:
    def test_concurrent_puts_of_a_new_id_make_one_person(self, api_key):
        def call(i):
            body = {"end_user_id": "race", "attributes": {"n": i}}
            return status_and_body(put(client_for(api_key.key), body))

        results = run_together(THREADS, call)
        assert [status for status, _ in results] == [200] * THREADS, results
        assert sum(body["created"] is True for _, body in results) == 1
        person = EndUser.objects.get(workspace=api_key.workspace, end_user_id="race")
        assert person.attributes in [{"n": i} for i in range(THREADS)]

    def test_puts_racing_deletes_never_fail(self, api_key):
        def call(i):
            client = client_for(api_key.key)
            if i % 2:
                return delete(client, {"end_user_id": "race"}).status_code
            return put(client, {"end_user_id": "race", "display_name": f"n{i}"}).status_code

        statuses = run_together(THREADS, call)
        assert all(status in (200, 404) for status in statuses), statuses
        assert statuses.count(200) >= THREADS // 2  # every put succeeds
        assert EndUser.objects.filter(end_user_id="race").count() <= 1


_text = st.text(st.characters(exclude_categories=["Cs"], exclude_characters="\x00"), max_size=8)
_scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.sampled_from([0, 1, 0.0, -0.0, 1.0, True, False, 10**30])
    | _text
)


def _containers(children):
    return st.lists(children, max_size=3) | st.dictionaries(_text, children, max_size=3)


_json = st.recursive(_scalars, _containers, max_leaves=10)
_attributes = st.dictionaries(_text, _json, max_size=4)
_ids = iter(range(10**9))


@settings(
    max_examples=60,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(first=_attributes, second=_attributes)
def test_attributes_round_trip_and_only_json_changes_write(api_client, first, second):
    """Any attributes read back as the JSON written; a PUT writes exactly when the JSON
    (key order aside) differs, which Python's == does not tell (True == 1 == 1.0)."""
    end_user_id = f"h{next(_ids)}"
    put(api_client, {"end_user_id": end_user_id, "attributes": first})
    stored = get(api_client, {"end_user_id": end_user_id}).json()["end_user"]
    assert json.dumps(stored["attributes"]) == json.dumps(first)
    after = put(api_client, {"end_user_id": end_user_id, "attributes": second}).json()["end_user"]
    assert json.dumps(after["attributes"]) == json.dumps(second)
    same = json.dumps(first, sort_keys=True) == json.dumps(second, sort_keys=True)
    assert (after["updated_at"] == stored["updated_at"]) is same
