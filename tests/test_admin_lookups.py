"""What the admin changelists let the query string filter, order and search on.

Django applies any query parameter it does not recognise as a filter to the changelist's
queryset, so ``?token_sealed__startswith=a`` once let staff without ``view_token`` read a
sealed token a character at a time, and ``?name__regex=^(a+)+$`` tied up a worker. Only the
lookups of the filters a changelist offers are accepted; anything else is a 400.
"""

from datetime import timedelta

import pytest
from django.apps import apps
from django.contrib import admin
from django.contrib.admin.views.main import ChangeList
from django.test import RequestFactory
from django.utils import timezone

from tests.support.admin import admin_url, staff_client
from tests.support.factories import (
    APIKeyFactory,
    SchemaMappingFactory,
    UserGroupFactory,
    WorkspaceFactory,
)
from usergroups import services
from usergroups.models import APIKey, UserGroup, Webhook

pytestmark = pytest.mark.django_db

# Written out here, not imported, so that the test does not trust the code it tests.
SECRET_COLUMNS = {
    UserGroup: ["token_digest", "token_sealed", "previous_token_digest"],
    APIKey: ["digest"],
    Webhook: ["secret_digest", "secret_sealed"],
}
# From each changelist, a path to every secret column (directly or across relations).
SECRET_LOOKUPS = {
    "usergroup": [
        "token_sealed__startswith",
        "token_digest__startswith",
        "token_digest",
        "token_digest__exact",
        "previous_token_digest__startswith",
        "previous_token_digest__isnull",
        "token_sealed__gte",
        "workspace__api_keys__digest__startswith",
        "workspace__user_groups__token_sealed__startswith",
    ],
    "apikey": [
        "digest__startswith",
        "digest",
        "digest__in",
        "workspace__user_groups__token_sealed__startswith",
        "workspace__api_keys__digest__startswith",
    ],
    "enduser": [
        "workspace__api_keys__digest__startswith",
        "workspace__user_groups__token_sealed__startswith",
        "workspace__user_groups__token_digest",
    ],
    "auditevent": [
        "workspace__api_keys__digest__startswith",
        "workspace__user_groups__token_sealed__startswith",
        "workspace__user_groups__token_digest",
    ],
    "workspace": [
        "user_groups__token_sealed__startswith",
        "user_groups__token_digest__startswith",
        "user_groups__previous_token_digest__startswith",
        "api_keys__digest__startswith",
        "webhooks__secret_sealed__startswith",
    ],
    "webhook": [
        "secret_sealed__startswith",
        "secret_digest",
        "secret_digest__startswith",
        "workspace__api_keys__digest__startswith",
        "workspace__webhooks__secret_sealed__startswith",
    ],
    "webhookdelivery": [
        "webhook__secret_sealed__startswith",
        "webhook__secret_digest",
        "webhook__workspace__user_groups__token_sealed__startswith",
    ],
}
# Fields that are no secret but that no filter of the changelist offers.
NOT_OFFERED = {
    "usergroup": ["team_id", "provided_id__startswith", "properties__contains", "name"],
    "apikey": ["prefix__startswith", "name__contains", "last_used_at__gte"],
    "workspace": ["slug__contains", "name", "id__gt"],
    "enduser": ["end_user_id__startswith", "attributes__contains", "tokens_revoked_at__gte"],
    "auditevent": ["user_group_id__startswith", "details__contains", "ip", "request_id"],
    "webhook": ["url__startswith", "description__contains", "consecutive_failures__gt"],
    "webhookdelivery": ["delivery_id__startswith", "last_response__contains", "attempts__gt"],
}
CHANGELISTS = sorted(SECRET_LOOKUPS)


def app_admins():
    return {
        model._meta.model_name: model_admin
        for model in apps.get_app_config("usergroups").get_models()
        if admin.site.is_registered(model)
        for model_admin in [admin.site.get_model_admin(model)]
    }


def test_every_changelist_of_the_app_is_covered():
    assert sorted(app_admins()) == CHANGELISTS


@pytest.fixture
def staff():
    """Staff who may view everything of the app but tokens: the attacker of finding 7."""
    return staff_client(
        "view_usergroup",
        "view_apikey",
        "view_workspace",
        "view_enduser",
        "view_webhook",
        "view_webhookdelivery",
        "view_auditevent",
    )


@pytest.fixture
def rows(settings):
    """A group with every secret column set (rotated within a grace period), a key, and
    two workspaces (the workspace filter shows only when there is a choice)."""
    workspace, _ = WorkspaceFactory(), WorkspaceFactory()
    evil_name = "a" * 20 + "!"  # what ^(a+)+$ backtracks on (kept short: bounded on old code)
    group = UserGroupFactory(workspace=workspace, name=evil_name)
    settings.USERGROUPS = {"ROTATION_GRACE_SECONDS": 60}
    services.groups.rotate_group_token(group)
    group.refresh_from_db()
    assert group.previous_token_digest
    SchemaMappingFactory(group=group)
    APIKeyFactory(workspace=workspace, name=evil_name)
    return group


@pytest.mark.parametrize("changelist", CHANGELISTS)
def test_lookups_on_secret_columns_are_refused(staff, rows, changelist):
    group = rows
    url = admin_url(changelist, "changelist")
    for lookup in SECRET_LOOKUPS[changelist]:
        for value in ("a", group.token_sealed[:1], group.token_digest[:1]):
            response = staff.get(url, {"team_id": group.pk, lookup: value})
            assert response.status_code == 400, (lookup, response.status_code)
            response = staff.get(url, {lookup: value})
            assert response.status_code == 400, (lookup, response.status_code)


@pytest.mark.parametrize("changelist", CHANGELISTS)
@pytest.mark.parametrize("lookup", ["name__regex", "name__iregex", "pk__regex", "id__iregex"])
def test_regex_lookups_are_refused(staff, rows, changelist, lookup):
    response = staff.get(admin_url(changelist, "changelist"), {lookup: "^(a+)+$"})
    assert response.status_code == 400


@pytest.mark.parametrize("changelist", CHANGELISTS)
def test_lookups_no_filter_offers_are_refused(staff, rows, changelist):
    url = admin_url(changelist, "changelist")
    for lookup in NOT_OFFERED[changelist]:
        assert staff.get(url, {lookup: "x"}).status_code == 400, lookup


def test_a_secret_column_is_refused_for_superusers_too(admin_client, rows):
    url = admin_url("usergroup", "changelist")
    assert admin_client.get(url, {"token_sealed__startswith": "a"}).status_code == 400


@pytest.mark.parametrize("changelist", CHANGELISTS)
def test_a_secret_column_as_to_field_is_refused(staff, rows, changelist):
    model = {"usergroup": UserGroup, "apikey": APIKey}.get(changelist)
    for column in SECRET_COLUMNS.get(model, []):
        response = staff.get(admin_url(changelist, "changelist"), {"_to_field": column})
        assert response.status_code == 400, column


def offered_parameters(model_admin, request) -> set[str]:
    """What the changelist's own filters read from the query string, as Django builds them."""
    changelist = model_admin.get_changelist_instance(request)
    parameters = {p for spec in changelist.filter_specs for p in spec.expected_parameters()}
    if model_admin.date_hierarchy:
        parameters |= {f"{model_admin.date_hierarchy}__{part}" for part in ("year", "month")}
    return parameters


@pytest.mark.parametrize("changelist", CHANGELISTS)
def test_every_parameter_of_the_offered_filters_is_allowed(admin_user, rows, changelist):
    model_admin = app_admins()[changelist]
    request = RequestFactory().get(admin_url(changelist, "changelist"))
    request.user = admin_user
    parameters = offered_parameters(model_admin, request)
    assert parameters  # each changelist offers filters
    for parameter in parameters:
        assert model_admin.lookup_allowed(parameter, "1", request), parameter
    assert isinstance(model_admin.get_changelist_instance(request), ChangeList)


def test_offered_filters_still_filter(staff):
    north, south = WorkspaceFactory(slug="north"), WorkspaceFactory(slug="south")
    old = UserGroupFactory(workspace=north, created_at=timezone.now() - timedelta(days=60))
    new = UserGroupFactory(workspace=north)
    other = UserGroupFactory(workspace=south)
    services.groups.rotate_group_token(new)
    live = APIKeyFactory(workspace=north)
    gone = APIKeyFactory(workspace=north, revoked_at=timezone.now())
    APIKeyFactory(workspace=south)
    since = (timezone.now() - timedelta(days=7)).isoformat()

    def listed(changelist, **params):
        response = staff.get(admin_url(changelist, "changelist"), params)
        assert response.status_code == 200, params
        return set(response.context["cl"].result_list)

    assert listed("usergroup", workspace__id__exact=north.pk) == {old, new}
    assert listed("usergroup", workspace__id__exact=south.pk) == {other}
    assert listed("usergroup", created_at__gte=since, workspace__id__exact=north.pk) == {new}
    assert listed("usergroup", token_rotated_at__isnull="False") == {new}
    assert listed("usergroup", token_rotated_at__gte=since) == {new}
    assert listed("apikey", workspace__id__exact=north.pk) == {live, gone}
    assert listed("apikey", workspace__id__exact=north.pk, state="active") == {live}
    assert listed("apikey", state="revoked") == {gone}
    assert listed("apikey", created_at__lt=since) == set()
    assert listed("workspace", created_at__gte=since) == {north, south}
    # Paging, search, ordering and the popup flags are no filters and stay allowed.
    assert listed("usergroup", q=new.name, o="-1", p="1") == {new}
    assert listed("apikey", q=live.prefix, _popup="1", _to_field="id") == {live}


# Ordering (?o=) and search (?q=) -----------------------------------------------------------


def secret_names() -> set[str]:
    return {name for names in SECRET_COLUMNS.values() for name in names}


@pytest.mark.parametrize("changelist", CHANGELISTS)
def test_no_column_orders_by_a_secret(staff, rows, changelist):
    url = admin_url(changelist, "changelist")
    columns = len(app_admins()[changelist].list_display)
    for o in [*range(-1, columns + 2), "token_digest", "digest", "1.token_sealed"]:
        for sign in ("", "-"):
            response = staff.get(url, {"o": f"{sign}{o}"})
            assert response.status_code == 200, o
            ordering = response.context["cl"].queryset.query.order_by
            used = {str(part).lstrip("-").split("__")[0] for part in ordering}
            assert not used & secret_names(), (o, ordering)


@pytest.mark.parametrize("changelist", CHANGELISTS)
def test_search_reaches_no_secret(staff, rows, changelist):
    group = rows
    group.refresh_from_db()
    key = APIKey.objects.get(workspace=group.workspace)
    url = admin_url(changelist, "changelist")
    for secret in (group.token_digest, group.token_sealed, group.token, key.digest):
        for term in (secret, secret[:8]):
            response = staff.get(url, {"q": term})
            assert response.status_code == 200
            assert list(response.context["cl"].result_list) == [], (changelist, term)
