"""The example project's webhook receiver (/demo/webhook/): what demo_setup registers,
signatures verified with standardwebhooks, redeliveries kept once, the last events listed."""

import io
import json
import time
from datetime import UTC, datetime

import pytest
from django.core.management import call_command
from django.test import override_settings
from standardwebhooks import Webhook as Signer

from example_project.dashboards.models import ReceivedWebhookEvent
from usergroups.models import Webhook
from usergroups.services import audit

RECEIVER = "/demo/webhook/"
EVENTS = "/demo/webhook/events/"

pytestmark = pytest.mark.django_db


@pytest.fixture
def secret(tmp_path, settings):
    settings.DEBUG = True
    settings.DEMO_WEBHOOK_SECRET_FILE = tmp_path / ".demo-webhook-secret"
    settings.USERGROUPS = {"WEBHOOK_ALLOW_PRIVATE": True}
    call_command("demo_setup", key_file=tmp_path / ".demo-api-key", stdout=io.StringIO())
    return settings.DEMO_WEBHOOK_SECRET_FILE.read_text().strip()


def signed(secret, body, message_id="msg_1", timestamp=None):
    timestamp = int(time.time()) if timestamp is None else timestamp
    signature = Signer(secret).sign(message_id, datetime.fromtimestamp(timestamp, UTC), body)
    return {
        "HTTP_WEBHOOK_ID": message_id,
        "HTTP_WEBHOOK_TIMESTAMP": str(timestamp),
        "HTTP_WEBHOOK_SIGNATURE": signature,
    }


def test_demo_setup_registers_the_receiver_once(secret, tmp_path):
    (webhook,) = Webhook.objects.all()
    assert webhook.url.endswith(RECEIVER) and webhook.secret() == secret
    call_command("demo_setup", key_file=tmp_path / ".demo-api-key", stdout=io.StringIO())
    assert list(Webhook.objects.all()) == [webhook]


def test_a_signed_event_is_kept_once_and_listed(client, secret):
    body = json.dumps({"type": "user_group.created", "timestamp": "t", "data": {"id": "evt_1"}})
    headers = signed(secret, body)
    for _ in range(2):  # a redelivery, same webhook-id
        response = client.post(RECEIVER, body, content_type="application/json", **headers)
        assert response.status_code == 204
    assert ReceivedWebhookEvent.objects.count() == 1
    listed = client.get(EVENTS).json()["events"]
    assert [(event["webhook_id"], event["type"]) for event in listed] == [
        ("msg_1", "user_group.created")
    ]


@pytest.mark.parametrize("tamper", ["body", "secret", "old"])
def test_a_bad_signature_is_refused(client, secret, tamper):
    body = json.dumps({"type": "user_group.created", "timestamp": "t", "data": {}})
    headers = signed(
        "whsec_" + "A" * 43 + "=" if tamper == "secret" else secret,
        body,
        timestamp=int(time.time()) - 3600 if tamper == "old" else None,
    )
    sent = body + " " if tamper == "body" else body
    response = client.post(RECEIVER, sent, content_type="application/json", **headers)
    assert response.status_code == 400
    assert not ReceivedWebhookEvent.objects.exists()


def test_an_event_of_the_demo_workspace_is_put_in_the_receivers_outbox(secret):
    webhook = Webhook.objects.get()
    event = audit.record(webhook.workspace_id, audit.EMBED_TOKEN_MINTED, user_group_id="acme")
    assert webhook.deliveries.filter(event=event).exists()


@override_settings(DASHBOARDS_DEMO_SITE=False)
def test_the_receiver_is_off_with_the_demo_site(client, secret):
    assert client.post(RECEIVER, "{}", content_type="application/json").status_code == 404
    assert client.get(EVENTS).status_code == 404
