"""``request.user`` of a request a group's token authenticated: the group, as an
authenticated principal, so ``IsAuthenticated`` and throttles keyed on the user work;
``request.auth`` stays what the token grants."""

import pytest
from django.contrib.auth import get_user_model
from django.core.cache import cache
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.throttling import UserRateThrottle
from rest_framework.views import APIView

from tests.support.api import assert_error
from tests.support.embed import dashboard, minted
from tests.support.factories import UserGroupFactory
from usergroups.auth.embed import EmbedTokenAuthentication
from usergroups.auth.group_token import GroupTokenAuthentication
from usergroups.auth.principal import GroupPrincipal
from usergroups.embed.grant import EmbedGrant
from usergroups.records import GroupRecord


class OncePerGroup(UserRateThrottle):
    rate = "1/minute"


class SiteDefaultsView(APIView):
    """A site whose default permission is ``IsAuthenticated``, throttled per user."""

    authentication_classes = [GroupTokenAuthentication, EmbedTokenAuthentication]
    permission_classes = [IsAuthenticated]
    throttle_classes = [OncePerGroup]

    def get(self, request):
        user = request.user
        return Response(
            {
                "user": [user.pk, user.id, user.team_id, user.user_group_id, user.workspace_id],
                "flags": [user.is_authenticated, user.is_anonymous, user.is_staff],
                "perm": user.has_perm("usergroups.view_token"),
                "auth": type(request.auth).__name__,
            }
        )


@pytest.fixture(autouse=True)
def fresh_throttle_counts():
    cache.clear()
    yield
    cache.clear()


def test_an_embed_token_is_an_authenticated_group(api_client, group):
    token = minted(api_client, group.provided_id)
    response = dashboard(token, view=SiteDefaultsView)
    assert response.status_code == 200, response.content
    pk = f"usergroup:{group.pk}"
    assert response.json() == {
        "user": [pk, pk, group.pk, group.provided_id, group.workspace_id],
        "flags": [True, False, False],
        "perm": False,
        "auth": EmbedGrant.__name__,
    }


def test_a_group_token_is_the_same_principal(api_client, group):
    response = dashboard(group.token, view=SiteDefaultsView, scheme="GroupToken")
    assert response.status_code == 200, response.content
    assert response.json()["user"][0] == f"usergroup:{group.pk}"
    assert response.json()["auth"] == GroupRecord.__name__


def test_no_token_is_still_refused(db):
    response = dashboard(None, view=SiteDefaultsView)
    assert response.status_code == 401


def test_a_user_throttle_counts_each_group_apart(api_client, group, other_workspace):
    other = UserGroupFactory.create(workspace=other_workspace)
    first = minted(api_client, group.provided_id)
    assert dashboard(first, view=SiteDefaultsView).status_code == 200
    assert dashboard(first, view=SiteDefaultsView).status_code == 429
    # another group has its own count
    assert dashboard(other.token, view=SiteDefaultsView, scheme="GroupToken").status_code == 200


def test_the_principal_never_equals_a_user_pk(db, group):
    user = get_user_model().objects.create_user("someone", password="x")
    principal = GroupPrincipal(user.pk, "acme", 1, "Acme")
    assert principal.pk != user.pk
    assert str(principal) == f"usergroup:{user.pk}"


def test_the_embed_refusals_are_unchanged_under_is_authenticated(api_client, group):
    head, payload, _ = minted(api_client, group.provided_id).split(".")
    assert_error(
        dashboard(f"{head}.{payload}.{'A' * 86}", view=SiteDefaultsView),
        401,
        "authentication_failed",
    )
