"""A host's view as the docs write it, under DRF's own exception handler (CONTRACT 6a):
every embed refusal keeps the contract's failure body and its ``code``, and its 401s
challenge with ``WWW-Authenticate: Embed error="<code>"``. And ``EMBED_REQUIRE_ORIGIN``.
"""

import jsonschema
import pytest
from django.core.management import call_command
from django.core.management.base import SystemCheckError
from django.test import override_settings
from django.urls import path
from drf_spectacular.generators import SchemaGenerator
from rest_framework.authentication import SessionAuthentication
from rest_framework.response import Response
from rest_framework.settings import api_settings
from rest_framework.views import APIView, exception_handler

from tests.support.api import assert_error
from tests.support.embed import clock_moved, dashboard, docs_host_views, mint, minted
from usergroups import services
from usergroups.auth.embed import EmbedTokenAuthentication
from usergroups.auth.group_token import GroupTokenAuthentication
from usergroups.auth.permissions import HasEmbedToken
from usergroups.checks import check_embed_require_origin


class HostView(APIView):
    """What docs/host-views.md shows: no exception handler of the app's."""

    authentication_classes = [EmbedTokenAuthentication]
    permission_classes = [HasEmbedToken]
    embed_resource = "sales"

    def get(self, request):
        return Response({"variables": request.auth.variables})


class SessionFirstView(HostView):
    """A class without a challenge first: DRF would turn a 401 into a 403."""

    authentication_classes = [SessionAuthentication, EmbedTokenAuthentication]


def host(token, view=HostView, **headers):
    return dashboard(token, view=view, **headers)


@pytest.fixture
def token(api_client, group):
    return minted(api_client, group.provided_id, origin="https://app.example.com")


def assert_challenge(response, code):
    assert response["WWW-Authenticate"] == f'Embed error="{code}"'


def test_the_view_runs_under_drfs_default_handler():
    assert HostView().get_exception_handler() is exception_handler
    assert api_settings.EXCEPTION_HANDLER is exception_handler


def test_a_good_token_passes(token):
    response = host(token, HTTP_ORIGIN="https://app.example.com")
    assert response.status_code == 200, response.content


@pytest.mark.parametrize("view", [HostView, SessionFirstView])
def test_an_expired_token_is_coded_401(api_client, group, view):
    with clock_moved(-120):
        expired = minted(api_client, group.provided_id, expires_in=60)
    response = host(expired, view=view)
    assert_error(response, 401, "token_expired")
    assert_challenge(response, "token_expired")


@pytest.mark.parametrize("view", [HostView, SessionFirstView])
def test_a_revoked_token_is_coded_401(token, group, view):
    services.embed.revoke_embed_tokens(group.pk)
    response = host(token, view=view)
    error = assert_error(response, 401, "authentication_failed")
    assert "revoked" in error["message"]
    assert_challenge(response, "authentication_failed")


def test_a_forged_token_is_coded_401(token):
    head, payload, _ = token.split(".")
    response = host(f"{head}.{payload}.{'A' * 86}")
    assert_error(response, 401, "authentication_failed")
    assert_challenge(response, "authentication_failed")


def test_another_origin_is_coded_403(token):
    response = host(token, HTTP_ORIGIN="https://evil.example")
    assert_error(response, 403, "origin_not_allowed")
    assert "WWW-Authenticate" not in response


def test_another_resource_is_coded_403(api_client, group):
    other = minted(api_client, group.provided_id, resource="orders")
    response = host(other)
    assert_error(response, 403, "permission_denied")


# --- The views docs/host-views.md writes, as their schema says them (issue 33) ------------


def described_401(view):
    """The JSON Schema of ``view``'s 401 in the site's OpenAPI document (refs resolvable)."""
    document = SchemaGenerator(patterns=[path("view/", view.as_view())]).get_schema(
        request=None, public=True
    )
    schema = document["paths"]["/view/"]["get"]["responses"]["401"]["content"]
    return {**schema["application/json"]["schema"], "components": document["components"]}


def answering(view):
    """``view``, or, where the docs show only its classes' lines, ``view`` with a ``get``."""
    if hasattr(view, "get"):
        return view
    return type(view.__name__, (view,), {"get": lambda self, request: Response({})})


DOCS_VIEWS = [answering(view) for view in docs_host_views()]


@pytest.mark.parametrize("view", DOCS_VIEWS, ids=lambda view: view.__name__)
def test_a_docs_host_view_refuses_no_token_as_its_schema_says(db, view):
    """Without a token, under DRF's own exception handler: 401 ``not_authenticated`` in the
    app's error shape, which the view's schema names (DRF answered ``{"detail": ...}``),
    challenging with the scheme of the view's first authentication class."""
    response = dashboard(None, view=view)
    assert response.status_code == 401, response.content
    body = response.json()
    jsonschema.validate(body, described_401(view))
    assert body["error"]["code"] == "not_authenticated"
    assert response["WWW-Authenticate"] == view.authentication_classes[0].keyword


@pytest.mark.parametrize(
    "view",
    [view for view in DOCS_VIEWS if GroupTokenAuthentication in view.authentication_classes],
    ids=lambda view: view.__name__,
)
def test_a_docs_host_view_refuses_a_bad_group_token_as_its_schema_says(db, view):
    response = dashboard("ugt_" + "A" * 43, view=view, scheme="GroupToken")
    assert response.status_code == 401, response.content
    jsonschema.validate(response.json(), described_401(view))
    assert response.json()["error"]["code"] == "authentication_failed"


# --- EMBED_REQUIRE_ORIGIN --------------------------------------------------------------


@override_settings(USERGROUPS={"EMBED_REQUIRE_ORIGIN": True})
@pytest.mark.parametrize(
    ("extra", "fields"),
    [({}, ["origin"]), ({"expires_in": 30.5}, ["origin", "expires_in"])],
    ids=["alone", "with another bad field"],
)
def test_a_mint_without_origin_is_refused_when_required(api_client, group, extra, fields):
    response = mint(api_client, {"user_group_id": group.provided_id, **extra})
    assert_error(response, 400, "invalid", fields=fields)


@override_settings(USERGROUPS={"EMBED_REQUIRE_ORIGIN": True})
def test_a_mint_with_origin_passes_when_required(api_client, group):
    response = mint(api_client, {"user_group_id": group.provided_id, "origin": "https://a.example"})
    assert response.status_code == 200, response.content


def test_a_token_without_origin_is_refused_once_required(
    api_client, group, django_assert_num_queries
):
    token = minted(api_client, group.provided_id)
    assert host(token).status_code == 200
    with override_settings(USERGROUPS={"EMBED_REQUIRE_ORIGIN": True}):
        with django_assert_num_queries(0):
            response = host(token)
        error = assert_error(response, 401, "authentication_failed")
        assert "origin" in error["message"]
        assert_challenge(response, "authentication_failed")
        answer = services.embed.introspect(group.workspace_id, token)
        assert answer is None


def test_the_deploy_check_warns_while_origin_is_not_required(settings):
    settings.USERGROUPS = {}
    assert [message.id for message in check_embed_require_origin(None)] == ["usergroups.W004"]
    settings.USERGROUPS = {"EMBED_REQUIRE_ORIGIN": True}
    assert check_embed_require_origin(None) == []


# The model checks read the database's features (a JSONField on SQLite).
@pytest.mark.django_db
def test_the_warning_is_for_check_deploy_only(settings):
    settings.USERGROUPS = {}
    call_command("check", fail_level="WARNING")  # no W003 without --deploy
    with pytest.raises(SystemCheckError, match="usergroups.W004"):
        call_command("check", deploy=True, fail_level="WARNING", tags=["security"])


# The model checks read the database's features (a JSONField on SQLite).
@pytest.mark.django_db
def test_a_non_bool_setting_is_an_error(settings):
    settings.USERGROUPS = {"EMBED_REQUIRE_ORIGIN": "yes"}
    with pytest.raises(SystemCheckError, match="usergroups.E009"):
        call_command("check")
