"""The webhook admin: registration with the secret shown once, no secret anywhere after,
changes through the service (with their events), deliveries read-only with redeliver."""

import re

from django.test import override_settings

from tests.support.admin import admin_url, shown_once
from tests.support.leaks import secrets_in
from usergroups.models import AuditEvent, Webhook, WebhookDelivery
from usergroups.services import audit
from usergroups.webhooks import registry

PUBLIC_URL = "https://203.0.114.10/hook"
SECRET_SHAPE = re.compile(r"whsec_[A-Za-z0-9+/]{43}=")


def add(admin_client, workspace, follow=True, **fields):
    """POST the add form, and follow its redirect to the secret's page unless ``follow`` is
    False."""
    data = {"workspace": workspace.pk, "url": PUBLIC_URL, "events_text": "user_group, api_key"}
    data.update(fields)
    url = admin_url("webhook", "add")
    return admin_client.post(url, {**data, "description": "d"}, follow=follow)


def test_adding_shows_the_secret_once_and_records_the_staff_user(admin_client, workspace):
    response = add(admin_client, workspace)
    assert response.status_code == 200
    page = response.content.decode()
    (secret,) = set(SECRET_SHAPE.findall(page))
    webhook = Webhook.objects.get()
    assert webhook.secret() == secret and webhook.events == ["user_group", "api_key"]
    event = AuditEvent.objects.get(action="webhook.created")
    assert (event.actor_type, event.actor_id) == ("staff", "admin")
    for view, args in (("changelist", ()), ("change", (webhook.pk,))):
        shown = admin_client.get(admin_url("webhook", view, *args)).content.decode()
        assert secrets_in(shown) == [] and webhook.webhook_id in shown


def test_the_add_redirects_to_a_page_that_shows_the_secret_once(admin_client, workspace):
    """Issue 27, item 6: a reload of the secret's page made a second webhook."""
    posted = add(admin_client, workspace, follow=False)
    webhook = Webhook.objects.get()
    assert posted["Location"] == admin_url("webhook", "new_secret", webhook.pk)
    (secret,) = shown_once(admin_client, posted, SECRET_SHAPE)
    assert webhook.secret() == secret
    assert Webhook.objects.count() == 1
    assert AuditEvent.objects.filter(action="webhook.created").count() == 1


def test_adding_is_held_to_the_apis_rules(admin_client, workspace):
    response = add(admin_client, workspace, url="http://10.0.0.1/x", events_text="nothing")
    assert response.status_code == 200
    errors = response.context["adminform"].form.errors
    assert set(errors) == {"url", "events_text"}
    assert not Webhook.objects.exists()


def test_disabling_records_its_event_and_enabling_clears_the_failures(admin_client, workspace):
    webhook, _ = registry.create_webhook(workspace.pk, PUBLIC_URL, ["user_group"])
    url = admin_url("webhook", "change", webhook.pk)
    assert admin_client.post(url, {"description": "x", "disabled": "on"}).status_code == 302
    webhook.refresh_from_db()
    assert webhook.disabled and webhook.description == "x"
    assert AuditEvent.objects.get(action="webhook.disabled").actor_type == "staff"
    Webhook.objects.filter(pk=webhook.pk).update(consecutive_failures=4, failing=True)
    assert admin_client.post(url, {"description": "x"}).status_code == 302
    webhook.refresh_from_db()
    # Its next delivery goes first again, as a new webhook's would.
    assert (webhook.disabled, webhook.consecutive_failures, webhook.failing) == (False, 0, False)


def test_deleting_goes_through_the_service(admin_client, workspace):
    webhook, _ = registry.create_webhook(workspace.pk, PUBLIC_URL, ["user_group"])
    url = admin_url("webhook", "delete", webhook.pk)
    assert admin_client.post(url, {"post": "yes"}).status_code == 302
    assert not Webhook.objects.exists()
    assert AuditEvent.objects.get(action="webhook.deleted").actor_type == "staff"


def test_the_secret_columns_cannot_be_filtered_on(admin_client, workspace):
    registry.create_webhook(workspace.pk, PUBLIC_URL, ["user_group"])
    for lookup in ("secret_sealed__startswith=a", "secret_digest__startswith=a"):
        assert (
            admin_client.get(admin_url("webhook", "changelist") + "?" + lookup).status_code == 400
        )


@override_settings(USERGROUPS={"WEBHOOK_ALLOW_PRIVATE": True})
def test_deliveries_are_read_only_and_failed_ones_can_be_redelivered(admin_client, workspace):
    registry.create_webhook(workspace.pk, PUBLIC_URL, ["user_group"])
    event = audit.record(workspace.pk, audit.USER_GROUP_CREATED)
    delivery = WebhookDelivery.objects.get(event=event)
    WebhookDelivery.objects.filter(pk=delivery.pk).update(status="failed", attempts=8)
    changelist = admin_url("webhookdelivery", "changelist")
    page = admin_client.get(changelist).content.decode()
    assert delivery.delivery_id in page and "user_group.created" in page
    assert admin_client.get(changelist + "add/").status_code in (301, 302, 404)
    response = admin_client.post(
        changelist, {"action": "redeliver", "_selected_action": [delivery.pk]}, follow=True
    )
    assert "sent again" in response.content.decode()
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts) == ("pending", 0)
