"""A refused request writes nothing on a host with ``ATOMIC_REQUESTS = True`` (CONTRACT
section 8a): the API's exception handler rolls the request's transaction back, as DRF's
does, whatever the view wrote before it refused.

The views here write a group through the services and then refuse, each in its way; they
are mounted on a URLconf of this module. The connection's ``ATOMIC_REQUESTS`` is switched
on for the test in the one settings dict that both Django's handler (which wraps the view
in ``atomic``) and DRF's ``set_rollback()`` read. The test runs outside a test
transaction (``transaction=True``), so a commit is a commit.
"""

import pytest
from django.core.exceptions import PermissionDenied
from django.db import connection, connections
from django.http import Http404
from django.urls import path
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from tests.support.api import assert_error, send
from usergroups.api.views import WorkspaceAPIView, workspace_id
from usergroups.errors.failures import Conflict
from usergroups.models import AuditEvent, UserGroup
from usergroups.services import groups

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.urls(__name__)]

REFUSALS = {
    "invalid": (ValidationError({"name": ["Refused after the write."]}), 400, "invalid"),
    "permission_denied": (PermissionDenied(), 403, "permission_denied"),
    "not_found": (Http404(), 404, "not_found"),
    "conflict": (Conflict(), 409, "conflict"),
}


class WriteThenAnswer(WorkspaceAPIView):
    """Creates the group ``written``, then answers as ``outcome`` says."""

    http_method_names = ["post"]

    def post(self, request: Request, outcome: str) -> Response:
        groups.create_group(workspace_id(request), "written", "Written", {}, None)
        if outcome in REFUSALS:
            raise REFUSALS[outcome][0]
        return Response({"success": 1})


urlpatterns = [path("write-then/<str:outcome>", WriteThenAnswer.as_view())]


@pytest.fixture
def atomic_requests(monkeypatch):
    settings_dict = connection.settings_dict
    # The same dict the handler reads through ``connections.settings``.
    assert connections.settings["default"] is settings_dict
    monkeypatch.setitem(settings_dict, "ATOMIC_REQUESTS", True)


@pytest.mark.parametrize("outcome", list(REFUSALS))
def test_a_refused_request_writes_nothing(api_client, atomic_requests, outcome):
    _, status, code = REFUSALS[outcome]
    response = send(api_client, "POST", {}, path=f"/write-then/{outcome}")

    assert_error(response, status, code, fields=["name"] if code == "invalid" else None)
    assert not UserGroup.objects.filter(provided_id="written").exists()
    assert not AuditEvent.objects.filter(action="user_group.created").exists()


def test_an_answered_request_commits_its_write(api_client, atomic_requests):
    """The other half: the request's transaction is not rolled back for nothing."""
    response = send(api_client, "POST", {}, path="/write-then/ok")

    assert response.status_code == 200, response.content
    assert UserGroup.objects.filter(provided_id="written").exists()
    assert AuditEvent.objects.filter(action="user_group.created").count() == 1


def test_without_atomic_requests_the_refusal_keeps_what_was_written(api_client):
    """Without ``ATOMIC_REQUESTS`` each write commits on its own, as Django has it: the
    rollback is the request transaction's, nothing more."""
    response = send(api_client, "POST", {}, path="/write-then/conflict")

    assert_error(response, 409, "conflict")
    assert UserGroup.objects.filter(provided_id="written").exists()
