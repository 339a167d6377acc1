"""Embed tokens for a person (CONTRACT sections 6a, 7 and 8a): minting with ``end_user``,
exclusive sessions, variables and their provenance, what a token is bound to, and the
one query of verification, through the API."""

import io
import json
from datetime import UTC, datetime
from unittest import mock

import pytest
from django.core.management import call_command
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from example_project.dashboards.sources import ensure_sample_data
from tests.support.api import assert_error, client_for, send
from tests.support.concurrency import run_together
from tests.support.embed import clock_moved, dashboard, introspect, mint, minted
from tests.support.factories import APIKeyFactory, SchemaMappingFactory, UserGroupFactory
from tests.support.queries import READS, WRITES, statements
from usergroups import services
from usergroups.auth.embed import EmbedTokenAuthentication
from usergroups.embed import tokens
from usergroups.embed.grant import EmbedGrant
from usergroups.models import APIKey, AuditEvent, EndUser, UserGroup
from usergroups.records import Ancestor, GroupRecord
from usergroups.services import end_users, groups

END_USER_URL = "/api/user/end-user"


def works(token) -> bool:
    return dashboard(token).status_code == 200


def assert_refused(token):
    response = dashboard(token)
    assert_error(response, 401, "authentication_failed")
    assert response["WWW-Authenticate"] == 'Embed error="authentication_failed"'


def person_token(client, group_id, end_user_id="ann", **fields):
    """A token minted for ``end_user_id`` in ``group_id`` (``exclusive``, ``params``...)."""
    person = {"id": end_user_id, **fields.pop("person", {})}
    return minted(client, group_id, end_user=person, **fields)


@pytest.fixture
def embed_only_client(workspace):
    """A key of ``workspace`` with the embed scope only (no write)."""
    key = APIKeyFactory.create(
        workspace=workspace, scope_read=False, scope_write=False, scope_rotate=False
    )
    return client_for(key.key)


@pytest.fixture
def lineage(workspace):
    """Three levels: root > region > shop, each setting some keys."""
    root = UserGroupFactory.create(
        workspace=workspace, provided_id="root", properties={"tier": "gold", "regions": ["FR"]}
    )
    region = UserGroupFactory.create(
        workspace=workspace,
        provided_id="region",
        parent=root,
        properties={"regions": ["FR", "DE"], "currency": "EUR"},
    )
    shop = UserGroupFactory.create(
        workspace=workspace, provided_id="shop", parent=region, properties={"shop": 7}
    )
    return root, region, shop


# --- Minting for a person ---------------------------------------------------------------


def test_mint_creates_the_end_user_and_names_them(api_client, workspace, group):
    token = person_token(
        api_client, group.provided_id, person={"display_name": "Ann", "attributes": {"a": 1}}
    )
    assert tokens.verify(token).raw["end_user_id"] == "ann"
    row = EndUser.objects.get(workspace=workspace, end_user_id="ann")
    assert (row.display_name, row.attributes, row.disabled) == ("Ann", {"a": 1}, False)
    body = introspect(api_client, token).json()
    assert body["active"] is True and body["end_user_id"] == "ann"
    assert body["variables"] == {"region": "EU", "a": 1}
    assert body["variable_sources"] == {
        "region": f"user_group:{group.provided_id}",
        "a": "end_user",
    }


def test_the_mint_answer_is_unchanged_by_an_end_user(api_client, group):
    response = mint(api_client, {"user_group_id": group.provided_id, "end_user": {"id": "ann"}})
    assert response.status_code == 200
    assert set(response.json()) == {
        "success",
        "embed_token",
        "expires_in",
        "expires_at",
        "user_group",
    }


def test_an_unknown_group_creates_no_end_user(api_client, workspace):
    response = mint(api_client, {"user_group_id": "nobody", "end_user": {"id": "ann"}})
    assert_error(response, 404, "not_found")
    assert not EndUser.objects.exists()


def test_a_mint_changes_the_given_fields_that_differ(api_client, workspace, group):
    person_token(
        api_client, group.provided_id, person={"display_name": "Ann", "attributes": {"a": 1}}
    )
    person_token(api_client, group.provided_id, person={"attributes": {"a": 2}})
    row = EndUser.objects.get(workspace=workspace, end_user_id="ann")
    assert (row.display_name, row.attributes) == ("Ann", {"a": 2})  # not given: kept


@pytest.fixture
def ann(api_client, group):
    """An end user "ann" made by a first mint; the mint body of an unchanged second one."""
    person = {"id": "ann", "display_name": "Ann", "attributes": {"team": "blue"}}
    person_token(api_client, group.provided_id, person=person)
    return {"user_group_id": group.provided_id, "end_user": person}


def test_a_mint_with_an_unchanged_end_user_writes_nothing(
    api_client, recently_used_key, ann, django_assert_num_queries
):
    # The key, the group (with its workspace's generation and the end user, in one
    # query), the webhooks its event goes to: three reads, as for a mint naming no one;
    # the one write is the mint's audit event (CONTRACT section 8), none to the person.
    with django_assert_num_queries(4) as queries:
        assert mint(api_client, ann).status_code == 200
    writes = statements(queries.captured_queries, WRITES)
    assert len(writes) == 1 and AuditEvent._meta.db_table in writes[0], writes
    tables = (UserGroup._meta.db_table, EndUser._meta.db_table)
    read = statements(queries.captured_queries, READS)
    assert [sql for sql in read if all(table in sql for table in tables)], read


def test_a_mint_with_a_changed_end_user_writes_once(api_client, recently_used_key, ann):
    ann["end_user"]["attributes"] = {"team": "red"}
    with CaptureQueriesContext(connection) as queries:
        assert mint(api_client, ann).status_code == 200
    table, events = EndUser._meta.db_table, AuditEvent._meta.db_table
    writes = [sql for sql in statements(queries.captured_queries, ("INSERT", "UPDATE", "DELETE"))]
    person = [sql for sql in writes if events not in sql]
    logged = [sql for sql in writes if events in sql]
    assert len(person) == 1 and person[0].startswith("UPDATE") and table in person[0], writes
    assert len(logged) == 2, writes  # the events: end_user.updated, embed_token.minted


def test_a_disabled_end_user_gets_no_token(api_client, workspace, group, ann):
    services.end_users.disable_end_user(workspace.pk, "ann")
    before = EndUser.objects.get(end_user_id="ann").updated_at
    ann["end_user"]["attributes"] = {"team": "red"}
    assert_error(mint(api_client, ann), 403, "end_user_disabled")
    row = EndUser.objects.get(end_user_id="ann")
    assert row.attributes == {"team": "blue"} and row.updated_at == before  # nothing written


@pytest.mark.parametrize(
    "end_user",
    [
        "ann",
        [],
        None,
        {},
        {"id": ""},
        {"id": 1},
        {"id": "x" * 256},
        {"id": "a\x00b"},
        {"id": "ann", "display_name": 3},
        {"id": "ann", "display_name": "x" * 256},
        {"id": "ann", "attributes": []},
        {"id": "ann", "attributes": "{}"},
        {"id": "ann", "attributes": {"a": "x" * 70_000}},
    ],
)
def test_a_bad_end_user_is_invalid(api_client, group, end_user):
    body = {"user_group_id": group.provided_id, "end_user": end_user}
    assert_error(mint(api_client, body), 400, "invalid", fields=["end_user"])
    assert not EndUser.objects.exists()


def test_a_token_too_large_for_a_person_changes_nothing(api_client, group):
    body = {
        "user_group_id": group.provided_id,
        "end_user": {"id": "\N{GRINNING FACE}" * 255, "attributes": {"a": 1}},  # 1020 bytes
        "params": {"p": "y" * 1900},
        "resource": "r" * 255,
        "origin": "https://" + "o" * 60 + ".example",
    }
    assert_error(
        mint(api_client, body), 400, "invalid", fields=["params", "resource", "origin", "end_user"]
    )
    assert not EndUser.objects.exists()


@pytest.mark.parametrize("exclusive", [1, "true", None, "yes"])
def test_exclusive_must_be_a_boolean(api_client, group, exclusive):
    body = {"user_group_id": group.provided_id, "end_user": {"id": "ann"}, "exclusive": exclusive}
    assert_error(mint(api_client, body), 400, "invalid", fields=["exclusive"])


def test_exclusive_needs_an_end_user(api_client, group):
    body = {"user_group_id": group.provided_id, "exclusive": True}
    assert_error(mint(api_client, body), 400, "invalid", fields=["exclusive"])


def test_an_exclusive_mint_ends_the_persons_tokens_in_every_group(api_client, workspace, group):
    other = UserGroupFactory.create(workspace=workspace)
    earlier = [person_token(api_client, g.provided_id) for g in (group, other)]
    someone_else = person_token(api_client, group.provided_id, "bob")
    latest = person_token(api_client, other.provided_id, exclusive=True)
    for token in earlier:
        assert_refused(token)
    assert works(latest) and works(someone_else)
    assert works(person_token(api_client, group.provided_id))  # not exclusive: joins it


# --- Variables and their provenance ---------------------------------------------------


def test_precedence_and_provenance_over_three_levels(api_client, lineage):
    _root, _region, shop = lineage
    token = person_token(
        api_client,
        shop.provided_id,
        person={"attributes": {"team": "blue", "tier": "silver"}},
        params={"currency": "USD", "page": 2},
    )
    expected = {
        "tier": "silver",
        "regions": ["FR", "DE"],
        "currency": "USD",
        "shop": 7,
        "team": "blue",
        "page": 2,
    }
    sources = {
        "tier": "end_user",
        "regions": "user_group:region",
        "currency": "params",
        "shop": "user_group:shop",
        "team": "end_user",
        "page": "params",
    }
    body = introspect(api_client, token).json()
    assert (body["variables"], body["variable_sources"]) == (expected, sources)
    assert body["end_user_id"] == "ann"
    grant = dashboard_grant(token)
    assert (grant.end_user_id, grant.variables, grant.variable_sources) == (
        "ann",
        expected,
        sources,
    )


def dashboard_grant(token) -> EmbedGrant:
    """``request.auth`` as a host view gets it."""
    _user, grant = EmbedTokenAuthentication().authenticate_credentials(token)
    return grant


def test_attributes_are_read_at_verification(api_client, workspace, group):
    token = person_token(api_client, group.provided_id, person={"attributes": {"team": "blue"}})
    services.end_users.update_end_user(workspace.pk, "ann", {"attributes": {"team": "red"}})
    assert introspect(api_client, token).json()["variables"]["team"] == "red"


def _record(levels):
    """A record whose lineage is ``levels``: ``[(provided_id, properties)]``, root first."""
    ancestors = [Ancestor(n, pid, props, {}) for n, (pid, props) in enumerate(levels[:-1], 1)]
    provided_id, properties = levels[-1]
    now = datetime.now(UTC)
    group = UserGroup(
        team_id=len(levels),
        workspace_id=1,
        provided_id=provided_id,
        name="g",
        properties=properties,
        token_digest="d",
        token_sealed="s",
        created_at=now,
        updated_at=now,
        parent_id=len(levels) - 1 if ancestors else None,
    )
    return GroupRecord.from_model(group, [], ancestors)


keys = st.sampled_from(["a", "b", "c", "d", "region", "tier"])
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3)
    ),
    max_leaves=5,
)
layers = st.dictionaries(keys, json_values, max_size=4)


@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])
@given(
    properties=st.lists(st.none() | layers, min_size=1, max_size=4),
    attributes=st.none() | layers,
    params=layers,
    params_win=st.booleans(),
)
def test_the_merge_gives_each_key_the_last_layer_that_sets_it(
    properties, attributes, params, params_win
):
    """A writer's token (``params_win``): the last layer that sets a key gives it. A token
    minted without ``write``: its params give only the keys no other layer sets (9a)."""
    levels = [(f"g{n}", props) for n, props in enumerate(properties)]
    record = _record(levels)
    claims = tokens.Claims(
        team_id=1,
        user_group_id="g",
        generation=0,
        expires_at=datetime.now(UTC),
        resource=None,
        origin=None,
        params=params,
        raw={},
        jti="j",
        binding=tokens.Binding(1, 0, "b", 0),
        params_win=params_win,
    )
    grant = EmbedGrant(record, claims, attributes)
    stack = [(f"user_group:{pid}", props or {}) for pid, props in levels]
    stack += [("end_user", attributes or {})]
    if not params_win:
        params = {
            key: value
            for key, value in params.items()
            if all(key not in layer for _s, layer in stack)
        }
    stack += [("params", params)]
    assert set(grant.variables) == set(grant.variable_sources)
    for key, value in grant.variables.items():
        source, layer = next((s, layer) for s, layer in reversed(stack) if key in layer)
        assert grant.variable_sources[key] == source
        assert value == layer[key] and json.dumps(value) == json.dumps(layer[key])
    assert set(grant.variables) == {key for _s, layer in stack for key in layer}


# --- 6a: params cannot widen what the lineage sets -------------------------------------


def test_params_cannot_widen_the_groups_regions_with_an_embed_only_key(
    embed_only_client, workspace, lineage
):
    """The attack on 0.2: ``regions`` ["FR"] widened to three regions by params."""
    root = lineage[0]
    body = {"user_group_id": root.provided_id, "params": {"regions": ["DE", "FR", "UK"]}}
    error = assert_error(mint(embed_only_client, body), 400, "invalid", fields=["params"])
    assert "regions" in error["fields"]["params"][0]
    # An ancestor's key is as locked as the group's own.
    body = {"user_group_id": "shop", "params": {"tier": "platinum"}}
    assert_error(mint(embed_only_client, body), 400, "invalid", fields=["params"])
    # A key no group of the lineage sets is free.
    assert (
        mint(embed_only_client, {"user_group_id": "shop", "params": {"page": 2}}).status_code == 200
    )


def test_a_key_with_write_may_replace_lineage_keys(api_client, lineage):
    token = person_token(
        api_client, "shop", person={"attributes": {"tier": "x"}}, params={"regions": ["UK"]}
    )
    assert introspect(api_client, token).json()["variables"]["regions"] == ["UK"]


# --- 8a: a key without write grants at most what the lineage and the writers allowed ---

SALES_URL = "/embed/api/sales/"
ALL_REGIONS = ["DE", "FR", "UK"]


@pytest.fixture
def sales_groups(workspace):
    """Groups on the example project's sales rows (12 for each of DE, FR and UK): ``fr``
    sets ``regions: ["FR"]``, ``open`` sets no ``regions``, ``all`` sets the three."""
    ensure_sample_data()
    for provided_id, properties in [
        ("fr", {"regions": ["FR"]}),
        ("open", {}),
        ("all", {"regions": ALL_REGIONS}),
    ]:
        group = UserGroupFactory.create(
            workspace=workspace, provided_id=provided_id, properties=properties
        )
        SchemaMappingFactory.create(group=group, schema_id="sales", data_source_id="eu_warehouse")


def sales_rows(token) -> int:
    """How many rows the example project's sales endpoint answers for ``token``."""
    response = Client().get(SALES_URL, HTTP_AUTHORIZATION=f"Embed {token}")
    assert response.status_code == 200, response.content
    return len(response.json()["rows"])


def written():
    """What a refused mint must leave as it was: every end user, and the audit trail."""
    return list(EndUser.objects.order_by("pk").values()), AuditEvent.objects.count()


def test_an_embed_only_key_cannot_carry_attributes_into_another_group(
    api_client, embed_only_client, sales_groups
):
    """Issue 27: attributes allowed in a group that sets no ``regions`` were stored on the
    person and applied in the group that sets ``["FR"]``, its earlier tokens too."""
    earlier = person_token(api_client, "fr", "p")
    assert sales_rows(earlier) == 12
    before = written()
    person = {"id": "p", "attributes": {"regions": ALL_REGIONS}}
    for body in (
        {"user_group_id": "open", "end_user": person},
        {"user_group_id": "open", "end_user": person, "exclusive": True},
    ):
        error = assert_error(mint(embed_only_client, body), 403, "permission_denied")
        assert "write" in error["message"]
    assert written() == before
    later = person_token(embed_only_client, "fr", "p")
    assert introspect(api_client, later).json()["variables"] == {"regions": ["FR"]}
    assert sales_rows(later) == sales_rows(earlier) == 12


@pytest.mark.parametrize("attributes", [{"regions": ALL_REGIONS}, {"territory": ["FR"]}])
def test_an_embed_only_key_cannot_create_a_person_with_attributes(
    embed_only_client, sales_groups, attributes
):
    before = written()
    body = {"user_group_id": "open", "end_user": {"id": "q", "attributes": attributes}}
    assert_error(mint(embed_only_client, body), 403, "permission_denied")
    assert written() == before and not EndUser.objects.exists()


@pytest.mark.parametrize("person", [{}, {"attributes": {}}, {"display_name": "Q"}])
def test_an_embed_only_key_may_create_a_person_without_attributes(
    embed_only_client, workspace, sales_groups, person
):
    token = person_token(embed_only_client, "fr", "q", person=person)
    assert services.end_users.find_end_user(workspace.pk, "q").attributes == {}
    assert sales_rows(token) == 12


@pytest.mark.parametrize(
    "attributes",
    [{}, {"territory": ALL_REGIONS}, {"territory": ["FR"], "page": 1}, {"territory": "FR"}],
)
def test_an_embed_only_key_cannot_change_a_narrowing_a_writer_set(
    api_client, embed_only_client, sales_groups, attributes
):
    """Issue 27: ``attributes: {}`` wiped the ``territory`` a key with write had set."""
    earlier = person_token(api_client, "all", "p", person={"attributes": {"territory": ["FR"]}})
    assert sales_rows(earlier) == 12
    before = written()
    person = {"id": "p", "display_name": "P", "attributes": attributes}
    for body in (
        {"user_group_id": "all", "end_user": person},
        {"user_group_id": "all", "end_user": person, "exclusive": True},
    ):
        assert_error(mint(embed_only_client, body), 403, "permission_denied")
    assert written() == before  # not even the display name, and no earlier token revoked
    assert sales_rows(earlier) == 12


def test_an_embed_only_key_may_send_the_stored_attributes(
    api_client, embed_only_client, workspace, sales_groups
):
    person_token(api_client, "all", "p", person={"attributes": {"territory": ["FR"], "b": 1}})
    # The same object, its keys in another order: no change, so the mint goes on.
    person = {"display_name": "P", "attributes": {"b": 1, "territory": ["FR"]}}
    token = person_token(embed_only_client, "all", "p", person=person)
    assert sales_rows(token) == 12
    row = services.end_users.find_end_user(workspace.pk, "p")
    assert (row.display_name, row.attributes) == ("P", {"territory": ["FR"], "b": 1})


def test_an_embed_only_keys_params_cannot_replace_a_persons_attribute(
    api_client, embed_only_client, sales_groups
):
    """Issue 27: ``params`` were checked against the lineage only, so they replaced the
    person's ``territory``."""
    earlier = person_token(api_client, "all", "p", person={"attributes": {"territory": ["FR"]}})
    before = written()
    body = {"user_group_id": "all", "end_user": {"id": "p"}, "params": {"territory": ALL_REGIONS}}
    error = assert_error(mint(embed_only_client, body), 400, "invalid", fields=["params"])
    assert "territory" in error["fields"]["params"][0]
    # The stored attributes sent along change nothing: still the person's key.
    body["end_user"]["attributes"] = {"territory": ["FR"]}
    assert_error(mint(embed_only_client, body), 400, "invalid", fields=["params"])
    assert written() == before and sales_rows(earlier) == 12
    # A key that neither the lineage nor the person sets is the key's to set.
    token = person_token(embed_only_client, "all", "p", params={"page": 2})
    assert introspect(api_client, token).json()["variables"] == {
        "regions": ALL_REGIONS,
        "territory": ["FR"],
        "page": 2,
    }
    # A key with write may replace the person's key, as it could change the person.
    assert sales_rows(person_token(api_client, "all", "p", params={"territory": ALL_REGIONS})) == 36


def test_tokens_minted_before_never_widen_by_an_embed_only_keys_mints(
    api_client, embed_only_client, sales_groups
):
    """The three paths of issue 27 in turn, after tokens for the person minted with a key
    that has write: those tokens grant what they granted."""
    in_fr = person_token(api_client, "fr", "p", person={"attributes": {"territory": ["FR"]}})
    in_all = person_token(api_client, "all", "p")
    variables = {
        token: introspect(api_client, token).json()["variables"] for token in (in_fr, in_all)
    }
    assert variables[in_all] == {"regions": ALL_REGIONS, "territory": ["FR"]}
    assert sales_rows(in_fr) == sales_rows(in_all) == 12
    attacks = [
        {"user_group_id": "open", "end_user": {"id": "p", "attributes": {"regions": ALL_REGIONS}}},
        {"user_group_id": "all", "end_user": {"id": "p", "attributes": {}}},
        {"user_group_id": "all", "end_user": {"id": "p"}, "params": {"territory": ALL_REGIONS}},
    ]
    assert [mint(embed_only_client, body).status_code for body in attacks] == [403, 403, 400]
    for token in (in_fr, in_all):
        assert introspect(api_client, token).json()["variables"] == variables[token]
        assert sales_rows(token) == 12
    # And a new token of the person in either group grants no more.
    assert sales_rows(person_token(embed_only_client, "fr", "p")) == 12
    assert sales_rows(person_token(embed_only_client, "all", "p")) == 12


def test_a_writers_change_made_during_an_embed_only_mint_stands(
    api_client, embed_only_client, workspace, group
):
    """The mint compares the attributes with the person it read; a key with write that
    changes them between that read and the mint's write of the display name wins."""
    person_token(api_client, group.provided_id, "p", person={"attributes": {"territory": ["DE"]}})
    read = services.embed.group_to_mint

    def read_then_narrowed(*args):
        found = read(*args)
        services.end_users.update_end_user(workspace.pk, "p", {"attributes": {"territory": []}})
        return found

    person = {"id": "p", "display_name": "P", "attributes": {"territory": ["DE"]}}
    with mock.patch.object(services.embed, "group_to_mint", read_then_narrowed):
        token = minted(embed_only_client, group.provided_id, end_user=person)
    row = services.end_users.find_end_user(workspace.pk, "p")
    assert (row.display_name, row.attributes) == ("P", {"territory": []})
    assert introspect(api_client, token).json()["variables"]["territory"] == []


def test_an_embed_only_mint_with_the_stored_attributes_costs_what_any_does(
    embed_only_client, workspace, group, django_assert_num_queries
):
    person_token(embed_only_client, group.provided_id, "p")
    services.end_users.put_end_user(workspace.pk, "p", {"attributes": {"territory": ["DE"]}})
    APIKey.objects.filter(workspace=workspace).update(last_used_at=timezone.now())
    body = {
        "user_group_id": group.provided_id,
        "end_user": {"id": "p", "attributes": {"territory": ["DE"]}},
    }
    # The key, the group with the person, the webhooks; the mint's event: no lineage read,
    # no write to the person.
    with django_assert_num_queries(4) as queries:
        assert mint(embed_only_client, body).status_code == 200
    (write,) = statements(queries.captured_queries, WRITES)
    assert AuditEvent._meta.db_table in write


# --- What a token is bound to -----------------------------------------------------------


def test_a_group_id_handed_out_again_never_revives_a_token(api_client, workspace, group):
    token = minted(api_client, group.provided_id)
    team_id, provided_id = group.pk, group.provided_id
    services.groups.delete_group(workspace.pk, provided_id=provided_id)
    # Restored from a backup (rows written as they were: no service makes a team_id), or
    # re-created under the same id and team_id: a new group all the same.
    restored = UserGroupFactory.build(workspace=workspace, team_id=team_id, provided_id=provided_id)
    restored.save(force_insert=True)
    assert_refused(token)
    assert introspect(api_client, token).json() == {"success": 1, "active": False}


@pytest.mark.skipif("connection.vendor != 'postgresql'")
def test_the_sequence_reset_on_postgresql_never_revives_another_workspaces_token(
    api_client, workspace, other_workspace, other_api_client
):
    """The attack on 0.2: workspace A's group deleted, the sequence reset, workspace B's
    new group takes its team_id; A's dead token must not verify on B's group."""
    group = UserGroupFactory.create(workspace=workspace, provided_id="acme")
    token = minted(api_client, "acme")
    services.groups.delete_group(workspace.pk, provided_id="acme")
    table, column = UserGroup._meta.db_table, UserGroup._meta.pk.column
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT setval(pg_get_serial_sequence(%s, %s), %s, false)", [table, column, group.pk]
        )
    reborn = UserGroupFactory.create(workspace=other_workspace, provided_id="acme")
    assert reborn.pk == group.pk
    assert_refused(token)
    # The same in one workspace: a new "acme" in A after another reset.
    services.groups.delete_group(other_workspace.pk, provided_id="acme")
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT setval(pg_get_serial_sequence(%s, %s), %s, false)", [table, column, group.pk]
        )
    assert UserGroupFactory.create(workspace=workspace, provided_id="acme").pk == group.pk
    assert_refused(token)


def test_each_new_group_gets_a_binding_of_its_own(workspace):
    groups = UserGroupFactory.create_batch(3, workspace=workspace)
    assert len({g.embed_binding for g in groups}) == 3 and all(g.embed_binding for g in groups)


@pytest.mark.parametrize("how", ["service", "command", "delete"])
def test_revoking_the_minting_key_revokes_its_tokens(workspace, group, how):
    """The attack on 0.2: a revoked key's tokens lived on for up to a day."""
    key, other = APIKeyFactory.create_batch(2, workspace=workspace)
    token = minted(client_for(key.key), group.provided_id)
    other_token = minted(client_for(other.key), group.provided_id)
    assert works(token)
    if how == "service":
        services.keys.revoke_key(key)
    elif how == "command":
        call_command("revoke_api_key", key.prefix, stdout=io.StringIO())
    else:
        services.keys.delete_key(key)
    assert_refused(token)
    assert works(other_token)
    assert introspect(client_for(other.key), token).json()["active"] is False


def test_a_deleted_and_recreated_person_never_revives_their_tokens(api_client, workspace, group):
    token = person_token(api_client, group.provided_id)
    services.end_users.delete_end_user(workspace.pk, "ann")
    assert_refused(token)
    services.end_users.put_end_user(workspace.pk, "ann", {})
    assert_refused(token)


def test_a_disabled_persons_tokens_are_refused(api_client, workspace, group):
    token = person_token(api_client, group.provided_id)
    send(api_client, "PUT", {"end_user_id": "ann", "disabled": True}, path=END_USER_URL)
    assert_refused(token)
    send(api_client, "PUT", {"end_user_id": "ann", "disabled": False}, path=END_USER_URL)
    assert_refused(token)  # disabling revoked it: enabling does not bring it back
    assert works(person_token(api_client, group.provided_id))


def test_the_same_end_user_id_in_two_workspaces_is_two_people(
    api_client, other_api_client, workspace, other_workspace, group
):
    theirs = UserGroupFactory.create(workspace=other_workspace, properties=None)
    mine = person_token(api_client, group.provided_id, person={"attributes": {"who": "A"}})
    other = person_token(other_api_client, theirs.provided_id, person={"attributes": {"who": "B"}})
    assert EndUser.objects.filter(end_user_id="ann").count() == 2
    assert introspect(api_client, mine).json()["variables"]["who"] == "A"
    assert introspect(other_api_client, other).json()["variables"]["who"] == "B"
    assert introspect(api_client, other).json() == {"success": 1, "active": False}
    services.end_users.revoke_tokens(workspace.pk, "ann")
    assert_refused(mine)
    assert works(other)


# --- Verification: one query for every kind of token ------------------------------------


@pytest.mark.parametrize(
    "kind", ["plain", "end_user", "params", "in_process", "in_process_end_user", "child"]
)
def test_verification_is_one_query_for_every_kind_of_token(
    api_client, workspace, lineage, kind, django_assert_num_queries
):
    shop = lineage[2]
    if kind == "plain":
        token = minted(api_client, "root")
    elif kind == "end_user":
        token = person_token(api_client, "shop", person={"attributes": {"x": 1}})
    elif kind == "params":
        token = minted(
            api_client, "region", params={"page": 1}, resource="r", origin="https://a.example"
        )
    elif kind == "child":
        token = minted(api_client, "shop")
    else:
        person = services.embed.EndUserSpec("ann") if kind == "in_process_end_user" else None
        token = services.embed.mint_embed_token(
            workspace.pk, shop.provided_id, end_user=person
        ).token
    with django_assert_num_queries(1) as queries:
        assert dashboard(token).status_code == 200
    assert statements(queries.captured_queries, WRITES) == []


def test_a_refused_token_costs_one_query_too(
    api_client, workspace, group, django_assert_num_queries
):
    token = person_token(api_client, group.provided_id)
    services.end_users.revoke_tokens(workspace.pk, "ann")
    with django_assert_num_queries(1):
        assert dashboard(token).status_code == 401


def test_bad_signatures_and_expired_tokens_cost_no_query(
    api_client, group, django_assert_num_queries
):
    token = person_token(api_client, group.provided_id)
    with clock_moved(-3600):
        expired = person_token(api_client, group.provided_id, expires_in=60)
    head, body, signature = token.split(".")
    forged = f"{head}.{body}.{signature[::-1]}"
    with django_assert_num_queries(0):
        assert_error(dashboard(expired), 401, "token_expired")
        assert_error(dashboard(forged), 401, "authentication_failed")


# --- Races ------------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_exclusive_mints_racing_leave_at_most_one_token_alive(workspace):
    group = UserGroupFactory.create(workspace=workspace)
    key = APIKeyFactory.create(workspace=workspace)
    body = {"user_group_id": group.provided_id, "end_user": {"id": "ann"}, "exclusive": True}
    for _round in range(3):
        answers = run_together(4, lambda _i: mint(client_for(key.key), body))
        assert [a.status_code for a in answers] == [200] * 4, [a.content for a in answers]
        alive = [a for a in answers if works(a.json()["embed_token"])]
        assert len(alive) == 1  # the last generation's; never two
    assert EndUser.objects.filter(end_user_id="ann").count() == 1


@pytest.mark.django_db(transaction=True)
def test_a_revocation_racing_mints_leaves_no_older_token_alive(workspace):
    group = UserGroupFactory.create(workspace=workspace)
    services.end_users.put_end_user(workspace.pk, "ann", {})

    def call(index):
        if index == 0:
            return services.end_users.revoke_tokens(workspace.pk, "ann").embed_generation
        person = services.embed.EndUserSpec("ann")
        return services.embed.mint_embed_token(
            workspace.pk, group.provided_id, end_user=person
        ).token

    for _round in range(3):
        generation, *minted_tokens = run_together(5, call)
        final = EndUser.objects.get(end_user_id="ann").embed_generation
        assert generation == final
        for token in minted_tokens:
            minted_at = tokens.verify(token).raw["ugen"]
            # Minted before the revocation committed: refused; after it: works.
            assert works(token) == (minted_at == final)


# --- 9a: a grant never outgrows its writers, at every use -------------------------------


def test_a_writers_later_value_wins_over_an_embed_only_tokens_params(
    api_client, embed_only_client, workspace, group
):
    """An embed-only key mints for a new person with ``territory`` params (allowed:
    nothing sets it yet); a writer then sets the person's ``territory``, then the
    group's: at each use the token grants the writer's value, not its params (on 0.4 it
    kept granting its params until it expired)."""
    token = person_token(
        embed_only_client, group.provided_id, "terry", params={"territory": ALL_REGIONS, "page": 2}
    )
    granted = dashboard_grant(token).variables
    assert (granted["territory"], granted["page"]) == (ALL_REGIONS, 2)
    end_users.put_end_user(workspace.pk, "terry", {"attributes": {"territory": ["DE"]}})
    grant = dashboard_grant(token)
    assert (grant.variables["territory"], grant.variables["page"]) == (["DE"], 2)
    assert grant.variable_sources["territory"] == "end_user"
    end_users.put_end_user(workspace.pk, "terry", {"attributes": {}})
    groups.update_group(workspace.pk, group.provided_id, {"properties": {"territory": ["FR"]}})
    grant = dashboard_grant(token)
    assert (grant.variables["territory"], grant.variables["page"]) == (["FR"], 2)
    assert grant.variable_sources["territory"] == f"user_group:{group.provided_id}"
    # A key with write may replace what the lineage sets: its token's params still win.
    writer_token = person_token(
        api_client, group.provided_id, "terry", params={"territory": ALL_REGIONS}
    )
    assert dashboard_grant(writer_token).variables["territory"] == ALL_REGIONS
