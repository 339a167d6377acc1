"""The example project's embed flow: customer site, embedded dashboard, data endpoint.

Here the data endpoint with a group token (``Authorization: GroupToken …``, what a
backend sends): it runs its SQL through ``render_sql`` with the group's properties on the
data source the group's mapping names for ``sales``. The same with the embed tokens the
dashboard sends: tests/test_demo_embed_tokens.py.
"""

import io
import re

import pytest
from django.core.management import call_command
from django.db import DataError, connection, transaction
from django.test import override_settings

from example_project.dashboards.demo import DEMO_GROUPS, seed_demo_groups
from example_project.dashboards.models import EuWarehouseSale, UsWarehouseSale
from example_project.dashboards.queries import column_takes
from example_project.dashboards.sources import ensure_sample_data, sample_rows
from tests.support.factories import (
    APIKeyFactory,
    SchemaMappingFactory,
    UserGroupFactory,
    WorkspaceFactory,
)
from usergroups import services
from usergroups.models import UserGroup

SALES_URL = "/embed/api/sales/"
TOKEN = re.compile(r"ugt_[A-Za-z0-9_-]{43}")


@pytest.fixture
def sales(db):
    """The shipped sample rows (a transactional test elsewhere may have flushed them)."""
    ensure_sample_data()


def make_group(workspace, provided_id, regions, source="eu_warehouse", **properties):
    props = {**properties} if regions is ... else {"regions": regions, **properties}
    group = UserGroupFactory(workspace=workspace, provided_id=provided_id, properties=props)
    if source is not None:
        SchemaMappingFactory(group=group, schema_id="sales", data_source_id=source)
    return group


@pytest.fixture
def acme(workspace, sales):
    return make_group(workspace, "acme-eu", ["DE", "FR"], "eu_warehouse")


@pytest.fixture
def globex(workspace, sales):
    return make_group(workspace, "globex-us", ["US-East", "US-West"], "us_warehouse")


def fetch(client, token=None, path=SALES_URL, **extra):
    if token is not None:
        extra["HTTP_AUTHORIZATION"] = f"GroupToken {token}"
    return client.get(path, **extra)


def expected(source, regions):
    return sorted(
        (row for row in sample_rows(source) if row["region"] in regions),
        key=lambda row: (row["month"], row["region"], row["product"]),
    )


# --- Two groups, two views of the data ---------------------------------------------


def test_two_groups_see_their_own_rows(client, acme, globex):
    eu = fetch(client, acme.token)
    us = fetch(client, globex.token)
    assert eu.status_code == us.status_code == 200
    assert eu.json()["rows"] == expected("eu_warehouse", {"DE", "FR"})
    assert us.json()["rows"] == expected("us_warehouse", {"US-East", "US-West"})
    assert {row["region"] for row in eu.json()["rows"]} == {"DE", "FR"}
    assert eu.json()["data_source"] == "eu_warehouse"
    assert eu.json()["variables"] == {"regions": ["DE", "FR"]}
    assert eu.json()["user_group"] == {"provided_id": "acme-eu", "name": acme.name}
    assert eu["Cache-Control"] == "no-store"


def test_one_region_as_a_plain_string(client, workspace, sales):
    group = make_group(workspace, "initech-uk", "UK")
    body = fetch(client, group.token).json()
    assert body["rows"] == expected("eu_warehouse", {"UK"})
    assert body["variables"] == {"regions": ["UK"]}


def test_the_mapping_picks_the_table(client, workspace, sales):
    """Same properties, another data source: the rows come from the other table."""
    UsWarehouseSale.objects.create(region="DE", product="Sprockets", month="2025-03", amount=7)
    group = make_group(workspace, "moved", ["DE"], "us_warehouse")
    rows = fetch(client, group.token).json()["rows"]
    assert rows == [{"region": "DE", "product": "Sprockets", "month": "2025-03", "amount": 7}]

    services.groups.update_group(workspace.pk, "moved", {"mapping": {"sales": "eu_warehouse"}})
    rows = fetch(client, group.token).json()["rows"]
    assert rows == expected("eu_warehouse", {"DE"})


def test_a_property_change_shows_at_once(client, workspace, acme):
    services.groups.update_group(workspace.pk, "acme-eu", {"properties": {"regions": ["UK"]}})
    assert fetch(client, acme.token).json()["rows"] == expected("eu_warehouse", {"UK"})


@pytest.mark.parametrize("regions", [[], None, [None]])
def test_no_regions_sees_nothing(client, workspace, sales, regions):
    group = make_group(workspace, "nobody", regions)
    response = fetch(client, group.token)
    assert response.status_code == 200 and response.json()["rows"] == []


# --- Refused tokens ------------------------------------------------------------------


def assert_refused(response, code="authentication_failed"):
    assert response.status_code == 401
    assert response["WWW-Authenticate"] == "GroupToken"
    body = response.json()
    assert body["success"] == 0 and body["error"]["code"] == code
    assert "rows" not in body


def test_no_token_is_401(client, acme):
    assert_refused(fetch(client), code="not_authenticated")


def test_rotated_token_is_refused_and_the_new_one_works(client, acme):
    old = acme.token
    rotated = services.groups.rotate_group_token(acme)
    assert_refused(fetch(client, old))
    assert fetch(client, rotated.token).status_code == 200


def test_rotation_through_the_api_refuses_the_old_token(client, workspace, acme):
    api = client_with_key(workspace)
    response = api.post("/api/user", {"current_token": acme.token}, content_type="application/json")
    assert response.status_code == 200
    assert_refused(fetch(client, acme.token))
    assert fetch(client, response.json()["user_group"]["token"]).status_code == 200


@override_settings(USERGROUPS={"ROTATION_GRACE_SECONDS": 60})
def test_rotation_grace_keeps_the_old_token_resolving(client, acme):
    old = acme.token
    services.groups.rotate_group_token(acme)
    assert fetch(client, old).status_code == 200


def test_deleted_group_token_is_refused(client, workspace, acme):
    token = acme.token
    services.groups.delete_group(workspace.pk, provided_id="acme-eu")
    assert_refused(fetch(client, token))


@pytest.mark.parametrize(
    "header",
    [
        "GroupToken ugt_short",
        "GroupToken not-a-token",
        "GroupToken " + "ugt_" + "!" * 43,
        "GroupToken " + "ugk_" + "a" * 43,
        "GroupToken ugt_" + "a" * 43,  # well formed, unknown
    ],
)
def test_malformed_or_unknown_tokens_are_refused(client, acme, header):
    assert_refused(client.get(SALES_URL, HTTP_AUTHORIZATION=header))


@pytest.mark.parametrize("header", ["GroupToken", "GroupToken a b", "grouptoken"])
def test_a_broken_header_is_not_a_login(client, acme, header):
    assert client.get(SALES_URL, HTTP_AUTHORIZATION=header).status_code == 401


def test_malformed_token_costs_no_query(client, acme, django_assert_num_queries):
    with django_assert_num_queries(0):
        assert_refused(fetch(client, "ugt_short"))


def test_the_scheme_word_is_case_insensitive(client, acme):
    response = client.get(SALES_URL, HTTP_AUTHORIZATION=f"grouptoken {acme.token}")
    assert response.status_code == 200


@pytest.mark.parametrize("name", ["token", "group_token", "access_token", "auth", "GroupToken"])
def test_a_token_in_the_query_string_is_ignored(client, acme, name):
    assert_refused(client.get(SALES_URL, {name: acme.token}), code="not_authenticated")


def test_a_token_in_a_cookie_is_ignored(client, acme):
    client.cookies["token"] = acme.token
    assert_refused(fetch(client), code="not_authenticated")


def client_with_key(workspace):
    from django.test import Client

    return Client(HTTP_AUTHORIZATION=f"Token {APIKeyFactory(workspace=workspace).key}")


def test_an_api_key_is_not_a_group_token(workspace, acme):
    api = client_with_key(workspace)
    assert_refused(api.get(SALES_URL), code="not_authenticated")
    key = api.defaults["HTTP_AUTHORIZATION"].split()[1]
    assert_refused(fetch(api, key))


@pytest.mark.parametrize("method", ["post", "put", "delete", "patch", "options"])
def test_only_get(client, acme, method):
    response = getattr(client, method)(SALES_URL, HTTP_AUTHORIZATION=f"GroupToken {acme.token}")
    assert response.status_code == 405


# --- Hostile properties and mappings ---------------------------------------------------

HOSTILE = [
    "DE' OR '1'='1",
    "DE'); DROP TABLE dashboards_sales_eu_warehouse; --",
    'FR" OR ""="',
    "UK' UNION SELECT region, product, month, amount FROM dashboards_sales_us_warehouse --",
    "DE /* comment */",
    "DE%",
    "%s",
    "{{ regions }}",
    "1) OR (1=1",
    "DE\\",
]


@pytest.mark.parametrize("value", HOSTILE)
def test_hostile_region_values_are_only_data(client, workspace, sales, value):
    for regions in ([value], value, ["FR", value]):
        UserGroup.objects.filter(workspace=workspace).delete()
        group = make_group(workspace, "hostile", regions)
        response = fetch(client, group.token)
        assert response.status_code == 200
        wanted = {"FR"} if isinstance(regions, list) and "FR" in regions else set()
        assert response.json()["rows"] == expected("eu_warehouse", wanted)
    assert EuWarehouseSale.objects.count() == len(sample_rows("eu_warehouse"))
    assert UsWarehouseSale.objects.count() == len(sample_rows("us_warehouse"))


@pytest.mark.parametrize(
    "properties",
    [
        {},  # no regions: no filter must not mean every row
        {"region": "DE"},
        {"regions": {"$in": ["DE"]}},
        {"regions": [["DE"]]},
        {"regions": [{"x": 1}]},
        {"regions": ["DE\x00"]},
        {"regions": "DE\x00' OR 1=1"},
    ],
)
def test_properties_that_cannot_filter_are_refused(client, workspace, sales, properties):
    try:
        with transaction.atomic():
            group = UserGroupFactory(workspace=workspace, provided_id="odd", properties=properties)
    except DataError:  # PostgreSQL's jsonb cannot hold a NUL: no such group can exist
        pytest.skip(f"{connection.vendor} cannot store these properties")
    SchemaMappingFactory(group=group, schema_id="sales", data_source_id="eu_warehouse")
    response = fetch(client, group.token)
    assert response.status_code == 422
    assert response.json()["error"]["code"] == "dashboard_unavailable"
    assert "rows" not in response.json()


# A region is text: numbers, booleans and integers no parameter takes are refused with a
# 422 before the query runs. They were 500s (issue 9, finding 4): PostgreSQL has no
# `varchar = integer`, SQLite's driver cannot bind 2**70.
NOT_REGIONS = {
    "integers": [1, 2],
    "an integer": 7,
    "booleans": [True],
    "a boolean": False,
    "a float": [1.5],
    "1e300": [1e300],
    "beyond 64 bits": [2**70],
    "beyond 64 bits, alone": -(2**70),
    "text and a number": ["DE", 3],
    "text and a boolean": ["DE", True],
}


@pytest.mark.parametrize("regions", NOT_REGIONS.values(), ids=NOT_REGIONS.keys())
def test_regions_the_region_column_cannot_take_are_422(client, workspace, sales, regions):
    group = make_group(workspace, "numbers", regions)
    response = fetch(client, group.token)
    assert response.status_code == 422, response.content[:300]
    body = response.json()
    assert body["success"] == 0 and body["error"]["code"] == "dashboard_unavailable"
    assert "regions" in body["error"]["message"]
    assert "rows" not in body


def test_region_checks_run_before_the_query(client, workspace, sales, django_assert_num_queries):
    group = make_group(workspace, "numbers", [1, 2])
    fetch(client, group.token)  # warm: the token's group
    # Authentication, which reads the group with its mapping; the sales query is never sent.
    with django_assert_num_queries(1):
        assert fetch(client, group.token).status_code == 422


@pytest.mark.parametrize(
    "column, value, takes",
    [
        ("region", "DE", True),
        ("region", None, True),
        ("region", 1, False),
        ("region", 1.0, False),
        ("region", True, False),
        ("region", ["DE"], False),
        ("amount", 5, True),
        ("amount", -(2**31), True),
        ("amount", 2**31 - 1, True),
        ("amount", 2**63, False),  # beyond the column on every database (SQLite's is 64-bit)
        ("amount", True, False),
        ("amount", 5.0, False),
        ("amount", "5", False),
    ],
)
def test_column_takes_what_the_column_compares_with(column, value, takes):
    field = EuWarehouseSale._meta.get_field(column)
    assert column_takes(field, value, connection) is takes


@pytest.mark.parametrize(
    "source",
    [
        None,
        "eu-warehouse",
        "dashboards_sales_eu_warehouse",
        "usergroups_usergroup",
        "eu_warehouse; DROP TABLE dashboards_sales_us_warehouse",
        "../eu_warehouse",
    ],
)
def test_only_known_data_sources(client, workspace, sales, source):
    group = make_group(workspace, "elsewhere", ["DE"], source)
    response = fetch(client, group.token)
    assert response.status_code == 422
    assert response.json()["error"]["code"] == "dashboard_unavailable"


def test_null_properties_are_refused_not_a_crash(client, workspace, sales):
    group = UserGroupFactory(workspace=workspace, provided_id="bare", properties=None)
    SchemaMappingFactory(group=group, schema_id="sales", data_source_id="eu_warehouse")
    assert fetch(client, group.token).status_code == 422


# --- The pages -----------------------------------------------------------------------


def test_embed_page_holds_no_token_and_frames_only_same_origin(client, acme):
    response = client.get("/embed/dashboard/")
    assert response.status_code == 200
    html = response.content.decode()
    assert not TOKEN.search(html)
    assert 'data-sales-url="/embed/api/sales/"' in html
    assert response["X-Frame-Options"] == "SAMEORIGIN"
    assert "frame-ancestors 'self'" in response["Content-Security-Policy"]
    assert "no-store" in response["Cache-Control"]


@pytest.fixture
def demo_site(settings, sales):
    settings.DASHBOARDS_DEMO_SITE = True
    workspace = WorkspaceFactory(slug="demo")
    seed_demo_groups(workspace)
    return workspace


def test_customer_site_is_off_without_debug(client, settings, db):
    settings.DASHBOARDS_DEMO_SITE = False
    assert client.get("/demo/").status_code == 404


def test_customer_site_lists_the_groups_without_tokens(client, demo_site):
    response = client.get("/demo/")
    assert response.status_code == 200
    html = response.content.decode()
    for spec in DEMO_GROUPS:
        assert spec["name"] in html and f"?group={spec['user_group_id']}" in html
    assert not TOKEN.search(html)
    assert "dashboard-frame" not in html


def test_customer_site_never_creates_a_group(client, demo_site):
    before = UserGroup.objects.count()
    response = client.get("/demo/", {"group": "not-a-customer"})
    assert response.status_code == 200
    assert "No group" in response.content.decode()
    assert not TOKEN.search(response.content.decode())
    assert UserGroup.objects.count() == before


def test_every_demo_group_has_a_dashboard(client, demo_site):
    for spec in DEMO_GROUPS:
        group = services.groups.find_group(demo_site.pk, spec["user_group_id"])
        body = fetch(client, group.token).json()
        regions = spec["properties"]["regions"]
        regions = set(regions) if isinstance(regions, list) else {regions}
        assert body["rows"] and body["rows"] == expected(spec["mapping"]["sales"], regions)


def test_demo_group_with_numbers_as_regions_gets_a_message_not_a_500(client, demo_site):
    services.groups.update_group(demo_site.pk, "acme-eu", {"properties": {"regions": [1, True]}})
    page = client.get("/demo/", {"group": "acme-eu"})
    assert page.status_code == 200
    token = services.groups.find_group(demo_site.pk, "acme-eu").token
    response = fetch(client, token)
    assert response.status_code == 422
    assert "region column takes text" in response.json()["error"]["message"]


# --- make demo, and the shipped data ---------------------------------------------------


def test_demo_setup_seeds_the_groups_idempotently(tmp_path, sales):
    def run():
        out = io.StringIO()
        call_command(
            "demo_setup", key_file=tmp_path / "key", base_url="http://127.0.0.1:9000", stdout=out
        )
        return out.getvalue()

    first = run()
    assert "http://127.0.0.1:9000/demo/" in first and "(3 new)" in first
    tokens = {
        spec["user_group_id"]: services.groups.find_group(
            UserGroup.objects.get(provided_id=spec["user_group_id"]).workspace_id,
            spec["user_group_id"],
        ).token
        for spec in DEMO_GROUPS
    }
    second = run()
    assert "(0 new)" in second
    assert UserGroup.objects.count() == len(DEMO_GROUPS)
    for provided_id, token in tokens.items():
        group = UserGroup.objects.get(provided_id=provided_id)
        assert group.token == token
        assert group.workspace.slug == "demo"


def test_sample_data_loading_is_idempotent(sales):
    counts = (EuWarehouseSale.objects.count(), UsWarehouseSale.objects.count())
    assert counts == (len(sample_rows("eu_warehouse")), len(sample_rows("us_warehouse")))
    assert ensure_sample_data() == 0
    assert (EuWarehouseSale.objects.count(), UsWarehouseSale.objects.count()) == counts


@pytest.mark.django_db
def test_dashboards_models_and_migrations_agree():
    out = io.StringIO()
    try:
        call_command("makemigrations", "dashboards", "--check", "--dry-run", stdout=out)
    except SystemExit:
        pytest.fail(f"makemigrations would write a migration:\n{out.getvalue()}")


@pytest.mark.django_db(transaction=True)
def test_the_migration_ships_the_sample_rows_and_reverses():
    out = io.StringIO()
    tables = {EuWarehouseSale._meta.db_table, UsWarehouseSale._meta.db_table}
    try:
        call_command("migrate", "dashboards", "zero", stdout=out)
        assert not tables & set(connection.introspection.table_names())
    finally:
        call_command("migrate", "dashboards", stdout=out)
    assert tables <= set(connection.introspection.table_names())
    assert EuWarehouseSale.objects.count() == len(sample_rows("eu_warehouse"))
    assert UsWarehouseSale.objects.count() == len(sample_rows("us_warehouse"))
