"""``/demo/``: a stand-in for a *customer site*, its page and its backend.

The page lists the demo workspace's groups (the site's customers) and, for the chosen one,
the people of the site's own directory who may sign in for it. Signed in as a person, it
frames the host's dashboard for that person; with nobody signed in, for the customer
itself (a token without a person). Its backend never hands the long-lived group token to
the browser: for each view it mints a short-lived embed token
(``DASHBOARDS_EMBED_TOKEN_SECONDS``, 60 s in the demo) locked to this site's origin and
to the ``sales`` dashboard, naming the signed-in person (``end_user``, with the
attributes of the site's directory, which narrow the rows), and answers it to the page's
script (``POST /demo/embed-token/``), which hands it to the frame with ``postMessage``:
never in a URL. The frame asks again before the token expires.

"Sign out everywhere" (``POST /demo/sign-out/``) revokes every embed token of the person,
in every customer, and ends their sign-ins on this site in every browser
(:class:`~example_project.dashboards.models.SignOut`): the backend mints nothing more for
them until they sign in again, so an open dashboard ends at its next request.

The backend mints and revokes as a real customer backend does: over HTTP, with the demo's
API key (``POST /api/user/embed-token``, ``POST /api/user/embed-token/revoke``; see
:mod:`.host_api`), so the host records them under that key. Only the list of customers
on the page is read from the host's database directly.
"""

from urllib.parse import urlencode

from django.conf import settings
from django.core.exceptions import SuspiciousOperation
from django.db import transaction
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect, JsonResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.cache import never_cache
from django.views.decorators.clickjacking import xframe_options_deny
from django.views.decorators.debug import sensitive_variables
from django.views.decorators.http import require_POST

from example_project.dashboards.demo import (
    demo_workspace_slug,
    end_user_of,
    people_of,
    person_of,
)
from example_project.dashboards.host_api import HostUnavailable, post
from example_project.dashboards.models import SignOut
from example_project.dashboards.queries import SCHEMA_ID
from usergroups.embed.origins import normalize_origin
from usergroups.models import Workspace
from usergroups.records import GroupRecord
from usergroups.services import groups

# The page loads its script and style from this site only, and its script talks to this
# site only (to mint tokens).
CUSTOMER_SITE_CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; frame-src 'self'; base-uri 'none'; form-action 'self'; "
    "frame-ancestors 'none'"
)

# This browser's sign-in on the customer site, in its session: {"group", "person", "at"}
# ("at": when, in epoch seconds; a sign-out everywhere since then ends it).
SIGNED_IN = "demo_signed_in"


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


def require_demo_site() -> None:
    """404 while the customer site is off."""
    if not demo_site_enabled():
        raise Http404("The demo customer site is off (DASHBOARDS_DEMO_SITE).")


def viewer(request: HttpRequest, provided_id: str) -> tuple[str, dict | None]:
    """Who this browser views the customer ``provided_id`` as: ``("person", person)``
    signed in, ``("signed_out", person)`` when that person signed out everywhere since (in
    this browser or another), or ``("customer", None)`` when nobody of this customer
    signed in here (the group's own view)."""
    entry = request.session.get(SIGNED_IN)
    if not isinstance(entry, dict) or entry.get("group") != provided_id:
        return "customer", None
    person = person_of(provided_id, str(entry.get("person", "")))
    if person is None:
        return "customer", None
    if signed_out_since(person["end_user_id"], entry.get("at")):
        return "signed_out", person
    return "person", person


def signed_out_since(end_user_id: str, signed_in_at: object) -> bool:
    """Whether the person signed out everywhere after a sign-in at ``signed_in_at``
    (epoch seconds; anything else counts as before): one indexed read."""
    rows = SignOut.objects.filter(end_user_id=end_user_id)
    last = rows.values_list("signed_out_at", flat=True).first()
    if last is None:
        return False
    return not isinstance(signed_in_at, int | float) or last.timestamp() >= signed_in_at


def refused(code: str, message: str) -> JsonResponse:
    """403 for the page's script: no token (or no sign-out) for whom it asked."""
    return JsonResponse({"error": code, "message": message}, status=403)


def unavailable(message: str) -> JsonResponse:
    """502 for the page's script: the host's API could not give what it asked for."""
    return JsonResponse({"error": "unavailable", "message": message}, status=502)


def page_of(provided_id: str) -> HttpResponseRedirect:
    return HttpResponseRedirect(
        f"{reverse('dashboards:customer-site')}?{urlencode({'group': provided_id})}"
    )


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
    require_demo_site()
    workspace = Workspace.objects.filter(slug=demo_workspace_slug()).first()
    cards = [_group_card(group) for group in groups.list_groups(workspace.pk)] if workspace else []
    chosen_id = request.GET.get("group", "")
    chosen = next((card for card in cards if card["provided_id"] == chosen_id), None)
    state, person = viewer(request, chosen_id) if chosen else ("customer", None)
    response = render(
        request,
        "dashboards/customer_site.html",
        {
            "workspace_slug": demo_workspace_slug(),
            "groups": cards,
            "chosen": chosen,
            "chosen_id": chosen_id,
            "people": people_of(chosen_id) if chosen else [],
            "state": state,
            "person": person,
            "token_seconds": embed_token_seconds(),
        },
    )
    response["Content-Security-Policy"] = CUSTOMER_SITE_CSP
    return response


@never_cache
@require_POST
@sensitive_variables("answer")
def mint_embed_token(request: HttpRequest) -> JsonResponse:
    """POST /demo/embed-token/ (``group=<user_group_id>``, ``person=<end_user_id>`` or
    empty, CSRF protected): an embed token for the customer's group, locked to this site's
    origin, naming the person signed in on this browser, for the page's script. Minted
    with ``POST /api/user/embed-token`` and the demo's API key.

    A real site takes the group and the person from its signed-in user, never from the
    request; the demo lets whoever opens it pick a customer and a person, and the request
    only says whom the page shows, which must be whom the session says: a person signed
    out (everywhere, or by signing in as someone else) gets no token, and the customer's
    own view is not minted in their stead. It never creates a group (the mint does not).
    """
    require_demo_site()
    provided_id = request.POST.get("group", "")
    if not provided_id:
        raise Http404("No customer chosen.")
    state, person = viewer(request, provided_id)
    shown = person["end_user_id"] if state == "person" and person else ""
    if state == "signed_out" or request.POST.get("person", "") != shown:
        return refused("signed_out", "That person is not signed in on this site.")
    origin = site_origin(request)  # where the tokens are used, and where the host is
    body = {
        "user_group_id": provided_id,
        "resource": SCHEMA_ID,
        "origin": origin,
        "expires_in": embed_token_seconds(),
    }
    if shown and person:
        # The directory's fields with each mint: the host keeps the person as the site
        # says (the demo's key has write: a change made on the host since is written back).
        body["end_user"] = end_user_of(person)
    try:
        status, answer = post(origin, "/api/user/embed-token", body)
    except HostUnavailable as exc:
        return unavailable(str(exc))
    if status == 200:
        return JsonResponse(
            {"embed_token": answer["embed_token"], "expires_in": answer["expires_in"]}
        )
    code = answer.get("error", {}).get("code") if isinstance(answer, dict) else None
    if code == "end_user_disabled":  # by the host's operator (admin or API)
        return refused("end_user_disabled", "That person's access is disabled.")
    if status == 404:
        raise Http404("No such group in the demo workspace.")
    return unavailable(f"The host's API refused the mint ({status} {code}).")


@never_cache
@require_POST
def sign_in(request: HttpRequest) -> HttpResponse:
    """POST /demo/sign-in/ (``group``, ``person``, CSRF protected): sign this browser in as
    a person of the customer's, as a login form would, then show the customer's page. The
    host hears of the person with the first mint for them."""
    require_demo_site()
    provided_id = request.POST.get("group", "")
    person = person_of(provided_id, request.POST.get("person", ""))
    if person is None:
        raise Http404("No such person for this customer in the site's directory.")
    request.session.cycle_key()  # a new session for a new sign-in, as django's login does
    request.session[SIGNED_IN] = {
        "group": provided_id,
        "person": person["end_user_id"],
        "at": timezone.now().timestamp(),
    }
    return page_of(provided_id)


@never_cache
@require_POST
def sign_out_everywhere(request: HttpRequest) -> HttpResponse:
    """POST /demo/sign-out/ (``group``, ``person``, CSRF protected): revoke every embed
    token of the person signed in here, in every customer
    (``POST /api/user/embed-token/revoke`` with ``{"end_user_id": …}`` and the demo's API
    key), and end their sign-ins on this site, in every browser. Answers JSON to the
    page's script (the page stays, so its open dashboard shows the end at its next
    request), else shows the customer's page."""
    require_demo_site()
    provided_id = request.POST.get("group", "")
    state, person = viewer(request, provided_id)
    if state != "person" or person is None or request.POST.get("person") != person["end_user_id"]:
        return refused("signed_out", "That person is not signed in on this site.")
    # The site's half first: from now on it mints nothing for the person, in any browser
    # (a mint asked for meanwhile is refused, or its token is one the revocation catches).
    with transaction.atomic():
        SignOut.objects.update_or_create(
            end_user_id=person["end_user_id"], defaults={"signed_out_at": timezone.now()}
        )
    # The host's half. 404: the host has no such person (never minted for): nothing to end.
    try:
        status, _answer = post(
            site_origin(request),
            "/api/user/embed-token/revoke",
            {"end_user_id": person["end_user_id"]},
        )
    except HostUnavailable as exc:
        return unavailable(str(exc))
    if status not in (200, 404):
        return unavailable(f"The host's API refused the revocation ({status}).")
    if request.headers.get("Accept", "").startswith("application/json"):
        return JsonResponse(
            {"signed_out": person["end_user_id"], "display_name": person["display_name"]}
        )
    return page_of(provided_id)
