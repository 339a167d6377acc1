"""The host's side of the embed flow (the customer's side is :mod:`.customer_site`).

- ``/embed/dashboard/``: the host's dashboard page, framed by a customer site. It gets an
  embed token from its parent with ``postMessage``, asks for a fresh one before it
  expires, and sends it in ``Authorization: Embed …`` to
- ``/embed/api/sales/``: the host's data endpoint. It takes an embed token (for the
  ``sales`` resource) or, for backends, a group token (``Authorization: GroupToken …``),
  and runs the dashboard's SQL with the token's variables on the group's data source.
  For a token that names a person it answers whom (``end_user``) and, for each variable
  that filters the rows, where its value came from (``variable_sources``).
"""

from django.conf import settings
from django.shortcuts import render
from django.views.decorators.cache import never_cache
from django.views.decorators.clickjacking import xframe_options_sameorigin
from rest_framework import exceptions, status
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from example_project.dashboards.customer_site import site_origin
from example_project.dashboards.queries import SCHEMA_ID, NoDataSource, VariableError, sales_rows
from usergroups.auth.embed import EmbedTokenAuthentication
from usergroups.auth.group_token import GroupTokenAuthentication
from usergroups.auth.permissions import HasEmbedToken, HasGroupToken
from usergroups.errors.handler import exception_handler
from usergroups.records import GroupRecord
from usergroups.services import end_users

# The token never leaves this page except in the data request's header.
EMBED_CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'self'"
)


def embed_parent_origins() -> list[str]:
    """Origins of customer sites that may frame the dashboard and hand it a token, besides
    this site's own (``DASHBOARDS_EMBED_PARENT_ORIGINS``, e.g. ``["https://app.example"]``)."""
    return [
        origin
        for origin in getattr(settings, "DASHBOARDS_EMBED_PARENT_ORIGINS", [])
        if isinstance(origin, str) and origin and not set(origin) & set(" ;,'\"")
    ]


@never_cache
@xframe_options_sameorigin
def embed_dashboard(request):
    """The dashboard page: no token in it, no data in it; both come later, by script.

    Its ``frame-ancestors`` names the origins the embed tokens it accepts are locked to:
    the demo customer site's (this site's) and the configured customer sites'. The script
    takes a token only from a parent of those origins, and only one naming that origin.
    """
    origins = [site_origin(request), *embed_parent_origins()]
    response = render(request, "dashboards/embed_dashboard.html", {"parent_origins": origins})
    # Browsers obey frame-ancestors over X-Frame-Options: the listed sites may frame it.
    response["Content-Security-Policy"] = " ".join([EMBED_CSP, *origins])
    return response


class DashboardError(exceptions.APIException):
    status_code = status.HTTP_422_UNPROCESSABLE_ENTITY
    default_code = "dashboard_unavailable"


class SalesDataView(APIView):
    """GET /embed/api/sales/: the sales rows the token's group may see.

    An embed token (the dashboard's) or a group token (a backend's); an embed token minted
    for another resource than ``sales`` is refused (403). The variables are the group's
    computed properties, with an embed token's person's attributes, then its locked
    ``params``, laid over them (``request.auth.variables``); ``request.auth`` says where
    each came from (``variable_sources``) and whom the token names (``end_user_id``).
    """

    authentication_classes = [GroupTokenAuthentication, EmbedTokenAuthentication]
    permission_classes = [HasGroupToken | HasEmbedToken]
    embed_resource = SCHEMA_ID
    renderer_classes = [JSONRenderer]
    throttle_classes = []
    http_method_names = ["get"]
    metadata_class = None
    schema = None  # the host's own endpoint, not part of the user group API's schema

    def get_exception_handler(self):
        return exception_handler

    def finalize_response(self, request, response, *args, **kwargs):
        response = super().finalize_response(request, response, *args, **kwargs)
        response["Cache-Control"] = "no-store"
        return response

    def get(self, request: Request) -> Response:
        end_user, sources = None, None
        if isinstance(request.auth, GroupRecord):
            group, variables = request.auth, None
        else:
            grant = request.auth
            group, variables, sources = grant.group, grant.variables, grant.variable_sources
            if grant.end_user_id is not None:
                # One more query, for the name to show; the verification read the rest.
                person = end_users.find_end_user(group.workspace_id, grant.end_user_id)
                end_user = {
                    "end_user_id": grant.end_user_id,
                    "display_name": person.display_name if person else grant.end_user_id,
                }
        try:
            result = sales_rows(group, variables)
        except NoDataSource:
            raise DashboardError("This group has no sales data source on this site.")
        except VariableError as exc:
            raise DashboardError(f"This group's properties cannot filter the dashboard: {exc}")
        return Response(
            {
                "success": 1,
                "user_group": {"provided_id": group.provided_id, "name": group.name},
                "end_user": end_user,
                "data_source": result.data_source,
                "variables": result.variables,
                # Where each filter's value came from: "user_group:<id>", "end_user" or
                # "params"; null for a group token (its group's own properties).
                "variable_sources": None
                if sources is None
                else {name: sources.get(name) for name in result.variables},
                "query": {"sql": result.sql, "params": result.params},
                "columns": ["region", "product", "month", "amount"],
                "rows": result.rows,
            }
        )
