"""Fail closed: no path on which a missing variable, an expired or a revoked embed token
yields data, whichever authentication classes a host's view lists, in whatever order."""

import pytest

from tests.support.api import assert_error
from tests.support.embed import DashboardView, clock_moved, dashboard, minted
from usergroups import services
from usergroups.auth.embed import EmbedTokenAuthentication
from usergroups.auth.group_token import GroupTokenAuthentication
from usergroups.auth.permissions import HasEmbedToken, HasGroupToken
from usergroups.contrib.variables import VariableError, group_variables, render_sql
from usergroups.embed.grant import EmbedGrant
from usergroups.embed.tokens import verify


class EitherView(DashboardView):
    """Both schemes, the group token's first (as a host may list them)."""

    authentication_classes = [GroupTokenAuthentication, EmbedTokenAuthentication]
    permission_classes = [HasGroupToken | HasEmbedToken]


@pytest.fixture
def token(api_client, group):
    return minted(api_client, group.provided_id, params={"region": "US"})


def test_the_variables_take_the_grant(token, group):
    record = services.groups.find_group(group.workspace_id, group.provided_id)
    grant = EmbedGrant(record, verify(token))
    assert group_variables(grant) == {"region": "US"}
    assert group_variables(record) == {"region": "EU"}


@pytest.mark.parametrize("auth", [None, "ugt_x", {}, object()])
def test_no_grant_gives_no_variables(auth):
    with pytest.raises(TypeError):
        group_variables(auth)


def test_a_variable_the_grant_lacks_is_an_error_not_an_open_filter(token, group):
    record = services.groups.find_group(group.workspace_id, group.provided_id)
    variables = group_variables(EmbedGrant(record, verify(token)))
    with pytest.raises(VariableError):
        render_sql("SELECT * FROM sales WHERE tenant = {{ tenant }}", variables)


def test_either_view_serves_both_schemes(token, group):
    assert dashboard(token, view=EitherView).data == {"variables": {"region": "US"}}
    response = dashboard(group.token, view=EitherView, scheme="GroupToken")
    assert response.data == {"variables": {"region": "EU"}}


def test_a_revoked_token_is_refused_whatever_the_order(token, group):
    services.embed.revoke_embed_tokens(group.pk)
    response = dashboard(token, view=EitherView)
    assert_error(response, 401, "authentication_failed")
    assert response["WWW-Authenticate"] == 'Embed error="authentication_failed"'  # not the first's


def test_an_expired_token_is_refused_whatever_the_order(api_client, group):
    with clock_moved(-120):
        token = minted(api_client, group.provided_id, expires_in=60)
    response = dashboard(token, view=EitherView)
    assert_error(response, 401, "token_expired")
    assert response["WWW-Authenticate"] == 'Embed error="token_expired"'


def test_a_group_record_does_not_pass_for_a_grant(group):
    """HasEmbedToken alone refuses a group token, even if a host lists both classes."""

    class EmbedOnly(EitherView):
        permission_classes = [HasEmbedToken]

    response = dashboard(group.token, view=EmbedOnly, scheme="GroupToken")
    assert_error(response, 403, "permission_denied")
