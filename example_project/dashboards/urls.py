from collections.abc import Callable
from functools import wraps

from django.http import HttpRequest, HttpResponse
from django.urls import path

from example_project.dashboards import customer_site, views, webhook_receiver
from usergroups import audit_context

#: Who the audit trail (and the Activity panel) names for the customer site's mints and
#: sign-outs.
CUSTOMER_BACKEND = audit_context.system("demo customer backend")


def as_customer_backend(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """The demo's customer backend shares the host's process and calls the services behind
    ``POST /api/user/embed-token`` and ``.../revoke`` where a real one would call them
    with its API key: its changes are recorded under its own name, not an anonymous
    ``system python``."""

    @wraps(view)
    def acting(request: HttpRequest, *args: object, **kwargs: object) -> HttpResponse:
        with audit_context.acting_for_request(CUSTOMER_BACKEND, request.META):
            return view(request, *args, **kwargs)

    return acting


app_name = "dashboards"

urlpatterns = [
    # The customer's side: its page, its backend's token minting, its people's sign-in.
    path("demo/", customer_site.customer_site, name="customer-site"),
    path(
        "demo/embed-token/",
        as_customer_backend(customer_site.mint_embed_token),
        name="customer-embed-token",
    ),
    path("demo/sign-in/", customer_site.sign_in, name="customer-sign-in"),
    path(
        "demo/sign-out/",
        as_customer_backend(customer_site.sign_out_everywhere),
        name="customer-sign-out",
    ),
    # Its webhook receiver (signature verified), and the events it took, newest first.
    path("demo/webhook/", webhook_receiver.receive, name="customer-webhook"),
    path("demo/webhook/events/", webhook_receiver.recent, name="customer-webhook-events"),
    # The host's side: the framed dashboard and its data endpoint.
    path("embed/dashboard/", views.embed_dashboard, name="embed-dashboard"),
    path("embed/api/sales/", views.SalesDataView.as_view(), name="sales-data"),
]
