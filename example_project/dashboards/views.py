"""The embed flow, end to end, in one site.

- ``/demo/``: a stand-in for a *customer site*. Its backend lists the demo workspace's
  groups, fetches the chosen group's current token server-side (a real customer backend
  calls ``GET /api/user`` with its API key) and hands it to the embedded dashboard with
  ``postMessage``: the token is never in a URL.
- ``/embed/dashboard/``: the host's dashboard page, framed by the customer site. It gets
  the token from its parent and sends it in ``Authorization: GroupToken …`` to
- ``/embed/api/sales/``: the host's data endpoint, authenticated by the group token; it
  runs the dashboard's SQL with the group's variables on the group's data source.
"""

from django.conf import settings
from django.http import Http404
from django.shortcuts import render
from django.views.decorators.cache import never_cache
from django.views.decorators.clickjacking import xframe_options_deny, xframe_options_sameorigin
from rest_framework import exceptions, status
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from usergroups.exceptions import exception_handler
from usergroups.group_token_auth import GroupTokenAuthentication
from usergroups.models import Workspace
from usergroups.permissions import HasGroupToken
from usergroups.records import GroupRecord
from usergroups.services import groups

from .demo import demo_workspace_slug
from .queries import NoDataSource, VariableError, sales_rows

# The pages load their script and style from this site only; the token never leaves it
# except in the data request's header.
CUSTOMER_SITE_CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "frame-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
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


def demo_site_enabled() -> bool:
    """The customer site shows tokens of the demo workspace to whoever opens it: only
    with ``DEBUG`` (``make demo``) unless ``DASHBOARDS_DEMO_SITE`` says otherwise."""
    return getattr(settings, "DASHBOARDS_DEMO_SITE", settings.DEBUG)


def _group_card(group: GroupRecord) -> dict:
    properties = group.properties if isinstance(group.properties, dict) else {}
    regions = properties.get("regions")
    if isinstance(regions, list | tuple):
        regions = ", ".join(str(region) for region in regions)
    return {
        "provided_id": group.provided_id,
        "name": group.name,
        "data_source": group.mapping.get("sales"),
        "regions": "none" if regions is None else str(regions),
    }


@never_cache
@xframe_options_deny
def customer_site(request):
    if not demo_site_enabled():
        raise Http404("The demo customer site is off (DASHBOARDS_DEMO_SITE).")
    workspace = Workspace.objects.filter(slug=demo_workspace_slug()).first()
    cards = [_group_card(group) for group in groups.list_groups(workspace.pk)] if workspace else []
    chosen_id = request.GET.get("group", "")
    chosen = token = None
    if chosen_id and any(card["provided_id"] == chosen_id for card in cards):
        # The customer backend's server-side call: the current token of its customer's
        # group (over HTTP this is GET /api/user with the API key).
        group, _created = groups.get_or_create_group(workspace.pk, chosen_id)
        chosen = _group_card(group)
        token = group.token  # None if the server secret that sealed it is gone
    response = render(
        request,
        "dashboards/customer_site.html",
        {
            "workspace": workspace,
            "workspace_slug": demo_workspace_slug(),
            "groups": cards,
            "chosen": chosen,
            "chosen_id": chosen_id,
            "token": token,
        },
    )
    response["Content-Security-Policy"] = CUSTOMER_SITE_CSP
    return response


@never_cache
@xframe_options_sameorigin
def embed_dashboard(request):
    """The dashboard page: no token in it, no data in it; both come later, by script."""
    origins = embed_parent_origins()
    response = render(request, "dashboards/embed_dashboard.html", {"parent_origins": origins})
    # Browsers obey frame-ancestors over X-Frame-Options: the listed sites may frame it.
    response["Content-Security-Policy"] = " ".join([EMBED_CSP, *origins])
    return response


class DashboardError(exceptions.APIException):
    status_code = status.HTTP_422_UNPROCESSABLE_ENTITY
    default_code = "dashboard_unavailable"


class SalesDataView(APIView):
    """GET /embed/api/sales/: the sales rows the token's group may see."""

    authentication_classes = [GroupTokenAuthentication]
    permission_classes = [HasGroupToken]
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
        group: GroupRecord = request.auth
        try:
            result = sales_rows(group)
        except NoDataSource:
            raise DashboardError("This group has no sales data source on this site.")
        except VariableError as exc:
            raise DashboardError(f"This group's properties cannot filter the dashboard: {exc}")
        return Response(
            {
                "success": 1,
                "user_group": {"provided_id": group.provided_id, "name": group.name},
                "data_source": result.data_source,
                "variables": result.variables,
                "query": {"sql": result.sql, "params": result.params},
                "columns": ["region", "product", "month", "amount"],
                "rows": result.rows,
            }
        )
