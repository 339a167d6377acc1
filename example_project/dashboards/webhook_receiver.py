"""``/demo/webhook/``: the customer site's webhook receiver, the recipe of
docs/webhooks.md: verify the Standard Webhooks signature with the ``standardwebhooks``
package, drop a redelivery by its ``webhook-id``, keep the last events.

``/demo/webhook/events/`` answers the last :data:`KEPT` events, newest first, for the
site's activity panel. The signing secret is the one ``manage.py demo_setup`` got when it
registered this receiver (``.demo-webhook-secret``), or ``DEMO_WEBHOOK_SECRET``.
"""

import os
from pathlib import Path

from django.conf import settings
from django.db import IntegrityError, transaction
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_POST
from standardwebhooks import Webhook, WebhookVerificationError

from example_project.dashboards.customer_site import demo_site_enabled
from example_project.dashboards.host_api import read_secret
from example_project.dashboards.models import ReceivedWebhookEvent

#: Events kept for the panel; older ones are deleted as new ones come.
KEPT = 100


def secret_file() -> Path:
    return Path(
        getattr(settings, "DEMO_WEBHOOK_SECRET_FILE", settings.BASE_DIR / ".demo-webhook-secret")
    )


def signing_secret() -> str:
    given = os.environ.get("DEMO_WEBHOOK_SECRET", "")
    if given:
        return given
    return read_secret(secret_file())


@csrf_exempt  # a server-to-server POST, authenticated by its signature instead
@require_POST
def receive(request: HttpRequest) -> HttpResponse:
    secret = signing_secret()
    if not demo_site_enabled() or not secret:
        raise Http404("The demo receiver is off.")
    try:
        # Checks the signature and that the timestamp is within 5 minutes (replays).
        message = Webhook(secret).verify(request.body, dict(request.headers))
    except WebhookVerificationError:
        return HttpResponse("bad signature", status=400, content_type="text/plain")
    message_id = request.headers["webhook-id"]
    try:
        with transaction.atomic():
            ReceivedWebhookEvent.objects.create(
                message_id=message_id, event_type=message["type"], payload=message
            )
    except IntegrityError:  # a redelivery of one already taken: answered 2xx all the same
        return HttpResponse(status=204)
    with transaction.atomic():
        kept = ReceivedWebhookEvent.objects.order_by("-id").values_list("id", flat=True)
        ReceivedWebhookEvent.objects.filter(id__in=list(kept[KEPT:])).delete()
    return HttpResponse(status=204)


@never_cache
@require_GET
def recent(request: HttpRequest) -> JsonResponse:
    if not demo_site_enabled():
        raise Http404("The demo receiver is off.")
    events = [
        {"webhook_id": row.message_id, "received_at": row.received_at, **row.payload}
        for row in ReceivedWebhookEvent.objects.order_by("-id")[:KEPT]
    ]
    return JsonResponse({"events": events})
