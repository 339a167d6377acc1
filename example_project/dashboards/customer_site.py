"""``/demo/``: a stand-in for a *customer site*, its page and its backend.

The page lists the demo workspace's groups and frames the host's dashboard for the chosen
one. Its backend never hands the long-lived group token to the browser: for each view it
mints a short-lived embed token (``DASHBOARDS_EMBED_TOKEN_SECONDS``, 60 s in the demo)
locked to this site's origin and to the ``sales`` dashboard, and answers it to the page's
script (``POST /demo/embed-token/``), which hands it to the frame with ``postMessage``:
never in a URL. The frame asks again before the token expires.

A real customer backend mints with its API key (``POST /api/user/embed-token``); this one
lives in the same process as the host, so it calls the service behind that endpoint.
"""

from django.conf import settings
from django.core.exceptions import SuspiciousOperation
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.views.decorators.cache import never_cache
from django.views.decorators.clickjacking import xframe_options_deny
from django.views.decorators.debug import sensitive_variables
from django.views.decorators.http import require_POST

from example_project.dashboards.demo import demo_workspace_slug
from example_project.dashboards.queries import SCHEMA_ID
from usergroups.embed.origins import normalize_origin
from usergroups.models import Workspace
from usergroups.records import GroupRecord
from usergroups.services import embed, groups

# The page loads its script and style from this site only, and its script talks to this
# site only (to mint tokens).
CUSTOMER_SITE_CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; frame-src 'self'; base-uri 'none'; form-action 'self'; "
    "frame-ancestors 'none'"
)


def demo_site_enabled() -> bool:
    """The customer site mints tokens of the demo workspace for whoever opens it: only
    with ``DEBUG`` (``make demo``) unless ``DASHBOARDS_DEMO_SITE`` says otherwise."""
    return getattr(settings, "DASHBOARDS_DEMO_SITE", settings.DEBUG)


def embed_token_seconds() -> int:
    return int(getattr(settings, "DASHBOARDS_EMBED_TOKEN_SECONDS", 60))


def site_origin(request: HttpRequest) -> str:
    """This site's web origin as browsers send it (``http(s)://host[:port]``): the origin
    its tokens are locked to. ``get_host`` has checked the host against ALLOWED_HOSTS."""
    raw = f"{request.scheme}://{request.get_host()}"
    origin = normalize_origin(raw)
    if origin is None:  # e.g. a host name with "_", which ALLOWED_HOSTS may let through
        raise SuspiciousOperation(f"{raw!r} is not a web origin to lock embed tokens to.")
    return origin


def demo_workspace() -> Workspace:
    """The workspace whose groups are this site's customers; 404 while the site is off."""
    if not demo_site_enabled():
        raise Http404("The demo customer site is off (DASHBOARDS_DEMO_SITE).")
    workspace = Workspace.objects.filter(slug=demo_workspace_slug()).first()
    if workspace is None:
        raise Http404("No demo workspace: run make demo.")
    return workspace


def _group_card(group: GroupRecord) -> dict:
    properties = group.properties if isinstance(group.properties, dict) else {}
    regions = properties.get("regions")
    if isinstance(regions, list | tuple):
        regions = ", ".join(str(region) for region in regions)
    return {
        "provided_id": group.provided_id,
        "name": group.name,
        "data_source": group.mapping.get(SCHEMA_ID),
        "regions": "none" if regions is None else str(regions),
    }


@never_cache
@xframe_options_deny
def customer_site(request: HttpRequest) -> HttpResponse:
    """The page: no token in it; its script asks this site's backend for one."""
    if not demo_site_enabled():
        raise Http404("The demo customer site is off (DASHBOARDS_DEMO_SITE).")
    workspace = Workspace.objects.filter(slug=demo_workspace_slug()).first()
    cards = [_group_card(group) for group in groups.list_groups(workspace.pk)] if workspace else []
    chosen_id = request.GET.get("group", "")
    chosen = next((card for card in cards if card["provided_id"] == chosen_id), None)
    response = render(
        request,
        "dashboards/customer_site.html",
        {
            "workspace_slug": demo_workspace_slug(),
            "groups": cards,
            "chosen": chosen,
            "chosen_id": chosen_id,
            "token_seconds": embed_token_seconds(),
        },
    )
    response["Content-Security-Policy"] = CUSTOMER_SITE_CSP
    return response


@never_cache
@require_POST
@sensitive_variables("minted")
def mint_embed_token(request: HttpRequest) -> JsonResponse:
    """POST /demo/embed-token/ (``group=<user_group_id>``, CSRF protected): an embed
    token for the customer's group, locked to this site's origin, for the page's script.

    A real site takes the group from its signed-in user, never from the request; the demo
    lets whoever opens it pick a customer. It never creates a group.
    """
    workspace = demo_workspace()
    provided_id = request.POST.get("group", "")
    minted = embed.mint_embed_token(
        workspace.pk,
        provided_id,
        resource=SCHEMA_ID,
        origin=site_origin(request),
        expires_in=embed_token_seconds(),
    )
    if minted is None:
        raise Http404("No such group in the demo workspace.")
    return JsonResponse({"embed_token": minted.token, "expires_in": minted.expires_in})
