"""The extensions of the interface: PUT updates, DELETE deletes, GET /api/user/list lists."""

import pytest
from django.db import IntegrityError
from django.db.models.query import QuerySet

from tests.support.api import get_or_create, send
from tests.support.factories import (
    APIKeyFactory,
    SchemaMappingFactory,
    UserGroupFactory,
    WorkspaceFactory,
)
from usergroups.auth.group_token import resolve_group_token
from usergroups.models import SchemaMapping, UserGroup
from usergroups.signals import group_deleted, group_updated

LIST_URL = "/api/user/list"


@pytest.fixture
def mapped_group(group):
    SchemaMappingFactory(group=group, schema_id="sales", data_source_id="eu-1")
    return group


class TestUpdate:
    def test_given_fields_replace_the_stored_ones(self, api_client, mapped_group):
        response = send(
            api_client,
            "PUT",
            {
                "user_group_id": mapped_group.provided_id,
                "name": "Renamed",
                "mapping": {"orders": 7},
            },
        )
        assert response.status_code == 200, response.content
        body = response.json()["user_group"]
        assert body["name"] == "Renamed"
        assert body["mapping"] == {"orders": "7"}  # replaced, not merged
        assert body["properties"] == {"region": "EU"}  # absent: kept
        assert body["token"] == mapped_group.token  # an update never rotates
        stored = get_or_create(api_client, {"user_group_id": mapped_group.provided_id}).json()[
            "user_group"
        ]
        assert stored["name"] == "Renamed" and stored["mapping"] == {"orders": "7"}

    def test_a_whole_number_in_the_mapping_is_its_decimal_string(self, api_client, group):
        """Written with a fraction too (``7.0``): JSON Schema's ``integer`` includes it."""
        mapping = {"orders": 7.0, "sales": 7, "big": 1e20}
        response = send(api_client, "PUT", {"user_group_id": group.provided_id, "mapping": mapping})
        assert response.status_code == 200, response.content
        expected = {"orders": "7", "sales": "7", "big": "100000000000000000000"}
        assert response.json()["user_group"]["mapping"] == expected

    def test_properties_replaced_and_cleared(self, api_client, group):
        send(api_client, "PUT", {"user_group_id": group.provided_id, "properties": {"tier": 2}})
        assert UserGroup.objects.get(pk=group.pk).properties == {"tier": 2}
        send(api_client, "PUT", {"user_group_id": group.provided_id, "properties": None})
        assert UserGroup.objects.get(pk=group.pk).properties is None

    def test_rename(self, api_client, group):
        response = send(
            api_client, "PUT", {"user_group_id": group.provided_id, "new_user_group_id": "new-id"}
        )
        assert response.json()["user_group"]["provided_id"] == "new-id"
        assert (
            get_or_create(api_client, {"user_group_id": "new-id"}).json()["new_user_group"] is False
        )

    def test_another_integrity_error_is_not_reported_as_a_taken_id(
        self, api_client, mapped_group, monkeypatch
    ):
        """Only a rename onto an id the workspace has is 409: a constraint failing for
        another reason (here a mapping row) is the error it is, and changes nothing."""

        def failing_bulk_create(queryset, objs, *args, **kwargs):
            if queryset.model is SchemaMapping:
                raise IntegrityError("simulated mapping constraint")
            return original(queryset, objs, *args, **kwargs)

        original = QuerySet.bulk_create
        monkeypatch.setattr(QuerySet, "bulk_create", failing_bulk_create)
        before = list(UserGroup.objects.values()), list(SchemaMapping.objects.values())
        body = {
            "user_group_id": mapped_group.provided_id,
            "new_user_group_id": "a-free-id",
            "mapping": {"orders": "db-2"},
        }
        with pytest.raises(IntegrityError, match="simulated"):
            send(api_client, "PUT", body)
        assert (list(UserGroup.objects.values()), list(SchemaMapping.objects.values())) == before

    def test_rename_onto_an_existing_id_is_a_conflict(self, api_client, workspace, group):
        """Well formed, refused by what is stored: 409 (issue 33; it was a 400, which a
        fuzzer takes for valid data refused)."""
        other = UserGroupFactory(workspace=workspace)
        response = send(
            api_client,
            "PUT",
            {"user_group_id": group.provided_id, "new_user_group_id": other.provided_id},
        )
        assert response.status_code == 409
        assert response.json()["error"] == {
            "code": "conflict",
            "message": "Another user group of this workspace has the id new_user_group_id names.",
        }
        assert UserGroup.objects.get(pk=group.pk).provided_id == group.provided_id

    def test_unknown_is_404(self, api_client, db):
        response = send(api_client, "PUT", {"user_group_id": "nobody", "name": "x"})
        assert response.status_code == 404
        assert response.json()["error"]["code"] == "not_found"

    def test_other_workspace_is_404(self, api_client, db):
        foreign = UserGroupFactory(workspace=WorkspaceFactory())
        assert (
            send(api_client, "PUT", {"user_group_id": foreign.provided_id, "name": "x"}).status_code
            == 404
        )
        assert UserGroup.objects.get(pk=foreign.pk).name == foreign.name

    @pytest.mark.parametrize(
        "body",
        [
            {},
            {"user_group_id": 5},
            {"user_group_id": "x", "name": None},
            {"user_group_id": "x", "name": "n" * 256},
            {"user_group_id": "x", "mapping": {"a": ""}},
            {"user_group_id": "x", "properties": []},
            {"user_group_id": "x", "new_user_group_id": ""},
            {"user_group_id": "x\x00"},
        ],
    )
    def test_bad_input_is_invalid_and_changes_nothing(self, api_client, group, body):
        before = list(UserGroup.objects.values())
        response = send(api_client, "PUT", body)
        assert response.status_code == 400
        assert response.json()["error"]["code"] == "invalid"
        assert list(UserGroup.objects.values()) == before

    def test_sends_group_updated_after_commit(
        self, api_client, group, django_capture_on_commit_callbacks
    ):
        received = []
        group_updated.connect(
            lambda sender, group, **kw: received.append(group.team_id), weak=False, dispatch_uid="t"
        )
        try:
            with django_capture_on_commit_callbacks(execute=True):
                send(api_client, "PUT", {"user_group_id": group.provided_id, "name": "x"})
        finally:
            group_updated.disconnect(dispatch_uid="t")
        assert received == [group.pk]


class TestDelete:
    @pytest.mark.parametrize("by", ["user_group_id", "current_token"])
    def test_deletes_and_the_token_stops_working(self, api_client, mapped_group, by):
        token = mapped_group.token
        value = mapped_group.provided_id if by == "user_group_id" else token
        response = send(api_client, "DELETE", {by: value})
        assert response.status_code == 200
        assert response.json() == {
            "success": 1,
            "user_group": {
                "team_id": mapped_group.pk,
                "name": mapped_group.name,
                "provided_id": mapped_group.provided_id,
            },
        }
        assert not UserGroup.objects.filter(pk=mapped_group.pk).exists()
        assert not SchemaMapping.objects.filter(group_id=mapped_group.pk).exists()
        assert resolve_group_token(token) is None
        assert send(api_client, "POST", {"current_token": token}).status_code == 404

    def test_unknown_and_foreign_are_404(self, api_client, db):
        foreign = UserGroupFactory(workspace=WorkspaceFactory())
        for body in (
            {"user_group_id": "nobody"},
            {"current_token": foreign.token},
            {"user_group_id": foreign.provided_id},
        ):
            response = send(api_client, "DELETE", body)
            assert response.status_code == 404
        assert UserGroup.objects.filter(pk=foreign.pk).exists()

    @pytest.mark.parametrize(
        "body", [{}, {"user_group_id": "a", "current_token": "b"}, {"current_token": 1}]
    )
    def test_exactly_one_selector(self, api_client, group, body):
        response = send(api_client, "DELETE", body)
        assert response.status_code == 400
        assert response.json()["error"]["code"] == "invalid"
        assert UserGroup.objects.filter(pk=group.pk).exists()

    def test_sends_group_deleted_with_team_id(
        self, api_client, group, django_capture_on_commit_callbacks
    ):
        received = []
        group_deleted.connect(
            lambda sender, team_id, **kw: received.append(team_id), weak=False, dispatch_uid="t"
        )
        try:
            with django_capture_on_commit_callbacks(execute=True):
                send(api_client, "DELETE", {"user_group_id": group.provided_id})
        finally:
            group_deleted.disconnect(dispatch_uid="t")
        assert received == [group.pk]


class TestList:
    def test_pages_without_tokens(self, api_client, workspace):
        groups = [
            UserGroupFactory(workspace=workspace, provided_id=f"acme-{i:02}") for i in range(5)
        ]
        UserGroupFactory(workspace=WorkspaceFactory())  # another workspace's: never listed
        response = api_client.get(LIST_URL, {"page": 2, "page_size": 2})
        assert response.status_code == 200
        body = response.json()
        assert (body["success"], body["total_count"], body["page"], body["page_size"]) == (
            1,
            5,
            2,
            2,
        )
        assert [g["provided_id"] for g in body["user_groups"]] == ["acme-02", "acme-03"]
        assert all("token" not in g for g in body["user_groups"])
        assert not any(g.token in response.content.decode() for g in groups)

    def test_prefix_filter_is_exact(self, api_client, workspace):
        for provided_id in ("acme-1", "acme-2", "ACME-3", "beta", "acme_x", "acmeXx"):
            UserGroupFactory(workspace=workspace, provided_id=provided_id)
        body = api_client.get(LIST_URL, {"provided_id_prefix": "acme_"}).json()
        assert [g["provided_id"] for g in body["user_groups"]] == [
            "acme_x"
        ]  # "_" is not a wildcard
        body = api_client.get(LIST_URL, {"provided_id_prefix": "acme"}).json()
        assert body["total_count"] == 4

    def test_mappings_without_n_plus_one(
        self, api_client, workspace, django_assert_max_num_queries
    ):
        for _ in range(30):
            SchemaMappingFactory(group=UserGroupFactory(workspace=workspace))
        api_client.get(LIST_URL)  # the key's first use writes last_used_at; not measured
        with django_assert_max_num_queries(4):  # key, count, page, mappings
            body = api_client.get(LIST_URL, {"page_size": 500}).json()
        assert len(body["user_groups"]) == 30
        assert all(len(g["mapping"]) == 1 for g in body["user_groups"])

    def test_past_the_end_is_an_empty_page(self, api_client, group):
        body = api_client.get(LIST_URL, {"page": 9}).json()
        assert (body["total_count"], body["user_groups"]) == (1, [])

    @pytest.mark.parametrize(
        "query",
        [
            {"page": 0},
            {"page": "x"},
            {"page_size": 501},
            {"page_size": 0},
            {"provided_id_prefix": "a" * 256},
        ],
    )
    def test_bad_query_is_invalid(self, api_client, db, query):
        response = api_client.get(LIST_URL, query)
        assert response.status_code == 400
        assert list(response.json()["error"]["fields"]) == list(query)

    def test_needs_a_key(self, anon_api_client, db):
        assert anon_api_client.get(LIST_URL).status_code == 401

    def test_other_methods_are_405(self, api_client, db):
        response = api_client.post(LIST_URL, {}, format="json")
        assert response.status_code == 405
        assert response["Allow"] == "GET"


def test_another_workspace_key_sees_its_own_list_only(db):
    key = APIKeyFactory()
    UserGroupFactory(workspace=key.workspace, provided_id="mine")
    UserGroupFactory(provided_id="theirs")
    from rest_framework.test import APIClient

    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key.key}")
    assert [g["provided_id"] for g in client.get(LIST_URL).json()["user_groups"]] == ["mine"]
