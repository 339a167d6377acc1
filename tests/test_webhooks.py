"""Webhooks (CONTRACT section 8): registration, the outbox, signed delivery, retries,
the SSRF rule. Deliveries go to a real HTTP receiver on loopback (tests/support)."""

import base64
import io
import json
import socket
import threading
import time
from datetime import timedelta

import pytest
import standardwebhooks
import svix.webhooks
from django.core.management import call_command
from django.db import connection, transaction
from django.test import override_settings
from django.utils import timezone
from django_tasks_db.models import DBTaskResult

from tests.support.api import assert_error, client_for, send
from tests.support.factories import APIKeyFactory
from tests.support.leaks import secrets_in
from tests.support.webhook_receiver import (
    Behaviour,
    hanging_receiver,
    running_receiver,
    unreachable_url,
)
from usergroups import tasks
from usergroups.checks import check_webhook_settings
from usergroups.models import APIKey, AuditEvent, Webhook, WebhookDelivery, Workspace
from usergroups.services import audit, outbox
from usergroups.webhooks import addresses, deliveries, registry, sending
from usergroups.webhooks.lanes import Lanes

HOOK = "/api/user/webhook"
LIST = "/api/user/webhook/list"
PUBLIC_URL = "https://203.0.114.10/hook"  # an IP literal: no DNS needed, and public


def allow_private(**more: object) -> override_settings:
    """Private addresses allowed, and each task sending in its own thread: the test's,
    inside its transaction, which a lane's thread would not see."""
    return override_settings(
        USERGROUPS={
            "WEBHOOK_ALLOW_PRIVATE": True,
            "WEBHOOK_TIMEOUT_SECONDS": 2,
            "WEBHOOK_ATTEMPTS_IN_FLIGHT": 1,
            **more,
        }
    )


@pytest.fixture
def receiver():
    with running_receiver() as running:
        yield running


@pytest.fixture
def dns(monkeypatch):
    """Names this test resolves, by name (the resolver is the boundary): the address of
    each; any other name goes to the real resolver."""
    answers: dict[str, str] = {}
    real = socket.getaddrinfo

    def resolve(host, port, *args, **kwargs):
        if host in answers:
            family = socket.AF_INET6 if ":" in answers[host] else socket.AF_INET
            return [(family, socket.SOCK_STREAM, 6, "", (answers[host], port))]
        return real(host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", resolve)
    return answers


def register(api_client, url=PUBLIC_URL, events=("user_group",), description="d"):
    response = send(
        api_client, "POST", {"url": url, "events": list(events), "description": description}, HOOK
    )
    assert response.status_code == 200, response.content
    return response.json()["webhook"]


def make_webhook(workspace, url, events=("user_group",)):
    webhook, secret = registry.create_webhook(workspace.pk, url, list(events))
    return webhook, secret


# Registration, listing, deletion ------------------------------------------------------------


def test_registration_shows_the_secret_once_and_the_list_never(api_client, workspace):
    created = register(api_client, events=["user_group", "embed_token.minted"])
    assert created["secret"].startswith("whsec_")
    assert len(base64.b64decode(created["secret"][6:])) == 32
    assert created["url"] == PUBLIC_URL
    assert created["events"] == ["user_group", "embed_token.minted"]
    assert (created["description"], created["disabled"]) == ("d", False)
    listed = send(api_client, "GET", b"", LIST)
    assert listed.status_code == 200
    assert listed.json() == {
        "success": 1,
        "webhooks": [{key: value for key, value in created.items() if key != "secret"}],
    }
    assert created["secret"] not in listed.content.decode()


def test_the_secret_is_sealed_at_rest_and_opens_with_the_server_secret(api_client):
    created = register(api_client)
    row = Webhook.objects.get(webhook_id=created["webhook_id"])
    stored = json.dumps(list(Webhook.objects.values().filter(pk=row.pk)), default=str)
    raw = base64.b64decode(created["secret"][6:])
    for fragment in (created["secret"], created["secret"][6:], raw.hex()):
        assert fragment not in stored
    assert row.secret() == created["secret"]


def test_events_name_the_webhook_never_its_secret(api_client, workspace):
    created = register(api_client)
    response = send(api_client, "DELETE", {"webhook_id": created["webhook_id"]}, HOOK)
    assert response.status_code == 200
    assert response.json()["webhook"]["webhook_id"] == created["webhook_id"]
    assert not Webhook.objects.exists()
    events = list(
        AuditEvent.objects.filter(workspace=workspace, action__startswith="webhook.").order_by("id")
    )
    assert [event.action for event in events] == ["webhook.created", "webhook.deleted"]
    for event in events:
        assert event.actor_type == "api_key"
        assert event.details["webhook_id"] == created["webhook_id"]
        text = json.dumps(audit.as_dict(event))
        assert created["secret"] not in text and created["secret"][6:20] not in text


def test_another_workspaces_webhook_is_not_found(api_client, other_api_client):
    created = register(other_api_client)
    response = send(api_client, "DELETE", {"webhook_id": created["webhook_id"]}, HOOK)
    assert_error(response, 404, "not_found")
    assert send(api_client, "GET", b"", LIST).json()["webhooks"] == []
    assert Webhook.objects.count() == 1


@pytest.mark.parametrize(
    ("method", "path", "scope"),
    [("POST", HOOK, "write"), ("DELETE", HOOK, "write"), ("GET", LIST, "read")],
)
def test_each_operation_needs_its_scope(workspace, method, path, scope):
    key = APIKeyFactory(workspace=workspace)  # every scope
    APIKey.objects.filter(pk=key.pk).update(**{f"scope_{scope}": False})
    body = (
        {"url": PUBLIC_URL, "events": ["user_group"]} if method == "POST" else {"webhook_id": "x"}
    )
    response = send(client_for(key.key), method, body if method != "GET" else b"", path)
    assert_error(response, 403, "permission_denied")
    assert scope in response.json()["error"]["message"]
    assert not Webhook.objects.exists()


def test_the_list_costs_the_key_and_one_query(api_client, api_key, django_assert_num_queries):
    register(api_client)
    register(api_client)
    APIKey.objects.filter(pk=api_key.pk).update(last_used_at=timezone.now())
    with django_assert_num_queries(2):
        response = send(api_client, "GET", b"", LIST)
    assert len(response.json()["webhooks"]) == 2


GOOD = {"url": PUBLIC_URL, "events": ["user_group"], "description": "x"}


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"url": None}, "url"),
        ({"url": 12}, "url"),
        ({"url": ""}, "url"),
        ({"url": "not a url"}, "url"),
        ({"url": "ftp://203.0.114.10/x"}, "url"),
        ({"url": "http://203.0.114.10/hook"}, "url"),  # http without WEBHOOK_ALLOW_PRIVATE
        ({"url": "https://10.1.2.3/hook"}, "url"),  # private
        ({"url": "https://127.0.0.1/hook"}, "url"),  # loopback
        ({"url": "https://[::1]/hook"}, "url"),
        ({"url": "https://169.254.169.254/latest/meta-data"}, "url"),  # link-local (metadata)
        ({"url": "https://100.64.0.1/hook"}, "url"),  # shared address space
        ({"url": "https://0.0.0.0/hook"}, "url"),
        ({"url": "https://[::ffff:127.0.0.1]/hook"}, "url"),  # IPv4-mapped loopback
        ({"url": "https://localhost/hook"}, "url"),  # a name that resolves to loopback
        ({"url": "https://user:pw@203.0.114.10/hook"}, "url"),
        ({"url": "https://203.0.114.10/hook#frag"}, "url"),
        ({"url": "https://203.0.114.10:99999/hook"}, "url"),
        ({"url": "https://no-such-host.invalid/hook"}, "url"),
        ({"url": "https://203.0.114.10/" + "a" * 2000}, "url"),
        ({"url": "https://203.0.114.10/a b"}, "url"),
        ({"events": None}, "events"),
        ({"events": "user_group"}, "events"),
        ({"events": []}, "events"),
        ({"events": ["User_Group"]}, "events"),
        ({"events": ["user_group.cre"]}, "events"),  # names no action
        ({"events": ["nothing"]}, "events"),
        ({"events": [1]}, "events"),
        ({"events": ["user_group"] * 51}, "events"),
        ({"description": 3}, "description"),
        ({"description": "x" * 256}, "description"),
    ],
)
def test_bad_registrations_are_400_naming_the_field(api_client, change, field):
    body = {**GOOD, **change}
    if change.get(field, 0) is None and field != "description":
        del body[field]  # missing
    response = send(api_client, "POST", body, HOOK)
    assert_error(response, 400, "invalid", [field])
    assert not Webhook.objects.exists()


def test_a_url_as_long_as_the_schema_allows_is_registered(api_client):
    """0.4 refused a URL over 255 characters (the fields' default limit) while the
    schema, and the column, say 2000 (issue 33)."""
    url = PUBLIC_URL + "/" + "a" * (addresses.MAX_URL_LENGTH - len(PUBLIC_URL) - 1)
    assert len(url) == addresses.MAX_URL_LENGTH == 2000
    assert register(api_client, url=url)["url"] == url
    assert Webhook.objects.get().url == url


@pytest.mark.parametrize("body", [{}, {"webhook_id": 5}, {"webhook_id": "x" * 41}])
def test_bad_deletions_are_400_naming_the_field(api_client, body):
    assert_error(send(api_client, "DELETE", body, HOOK), 400, "invalid", ["webhook_id"])


def test_unknown_webhook_is_404(api_client):
    assert_error(send(api_client, "DELETE", {"webhook_id": "wh_nope"}, HOOK), 404, "not_found")


@pytest.mark.parametrize("url", ["http://203.0.114.10/hook", "https://127.0.0.1/hook"])
def test_a_refused_http_or_private_url_names_the_setting_that_allows_it(api_client, url):
    response = send(api_client, "POST", {**GOOD, "url": url}, HOOK)
    (message,) = assert_error(response, 400, "invalid", ["url"])["fields"]["url"]
    assert "WEBHOOK_ALLOW_PRIVATE" in message


@pytest.mark.parametrize(
    ("given", "kept"),
    [("user_group.", "user_group"), ("embed_token.minted.", "embed_token.minted")],
)
def test_a_trailing_dot_names_the_same_prefix(api_client, given, kept):
    assert register(api_client, events=[given, kept])["events"] == [kept]


@pytest.mark.parametrize("events", [["user_group.."], ["."], ["user_group.cre."]])
def test_a_trailing_dot_does_not_make_a_bad_prefix_good(api_client, events):
    assert_error(
        send(api_client, "POST", {**GOOD, "events": events}, HOOK), 400, "invalid", ["events"]
    )


@allow_private()
def test_allow_private_takes_http_and_loopback(api_client):
    created = register(api_client, url="http://127.0.0.1:9/hook")
    assert created["url"] == "http://127.0.0.1:9/hook"


# The outbox ---------------------------------------------------------------------------------


def test_a_matching_event_writes_one_delivery_per_webhook_in_its_transaction(workspace):
    first, _ = make_webhook(workspace, PUBLIC_URL, ["user_group"])
    second, _ = make_webhook(workspace, PUBLIC_URL, ["user_group.created", "api_key"])
    make_webhook(workspace, PUBLIC_URL, ["embed_token"])
    Webhook.objects.create(
        workspace=workspace,
        webhook_id="wh_off",
        url=PUBLIC_URL,
        events=["user_group"],
        disabled=True,
    )
    WebhookDelivery.objects.all().delete()
    with transaction.atomic():
        event = audit.record(workspace.pk, audit.USER_GROUP_CREATED, user_group_id="acme")
    written = WebhookDelivery.objects.filter(event=event)
    assert {delivery.webhook_id for delivery in written} == {first.pk, second.pk}
    assert {delivery.status for delivery in written} == {"pending"}
    assert len({delivery.delivery_id for delivery in written}) == 2


def test_a_rolled_back_change_leaves_no_event_and_no_delivery(workspace):
    make_webhook(workspace, PUBLIC_URL, ["user_group"])
    before = WebhookDelivery.objects.count(), AuditEvent.objects.count()
    with pytest.raises(RuntimeError), transaction.atomic():
        audit.record(workspace.pk, audit.USER_GROUP_CREATED, user_group_id="acme")
        assert WebhookDelivery.objects.count() == before[0] + 1
        raise RuntimeError("the change fails after its event")
    assert (WebhookDelivery.objects.count(), AuditEvent.objects.count()) == before


def test_another_workspaces_events_are_not_delivered(workspace, other_workspace):
    make_webhook(workspace, PUBLIC_URL, ["user_group"])
    audit.record(other_workspace.pk, audit.USER_GROUP_CREATED, user_group_id="acme")
    assert not WebhookDelivery.objects.filter(event__workspace=other_workspace).exists()


def test_the_outbox_costs_one_select_without_a_match(workspace, django_assert_num_queries):
    make_webhook(workspace, PUBLIC_URL, ["embed_token"])
    with transaction.atomic(), django_assert_num_queries(2):  # the event, the webhooks
        audit.record(workspace.pk, audit.USER_GROUP_CREATED, user_group_id="acme")


def test_the_commit_enqueues_each_delivery(workspace, django_capture_on_commit_callbacks):
    make_webhook(workspace, PUBLIC_URL, ["user_group"])
    with django_capture_on_commit_callbacks(execute=True):
        with transaction.atomic():
            event = audit.record(workspace.pk, audit.USER_GROUP_CREATED, user_group_id="a")
    delivery = WebhookDelivery.objects.get(event=event)
    queued = DBTaskResult.objects.filter(task_path="usergroups.tasks.deliver_webhook")
    assert [result.args_kwargs["args"] for result in queued] == [[delivery.delivery_id]]


# Delivery -----------------------------------------------------------------------------------


def deliver_one(workspace, url, action=audit.USER_GROUP_CREATED):
    event = audit.record(workspace.pk, action, user_group_id="acme", details={"name": "Acme"})
    delivery = WebhookDelivery.objects.get(event=event)
    return event, delivery, deliveries.attempt(delivery.delivery_id)


@allow_private()
def test_a_delivery_is_signed_as_standard_webhooks_and_svix_verify(workspace, receiver):
    webhook, secret = make_webhook(workspace, receiver.url)
    event, delivery, attempted = deliver_one(workspace, receiver.url)
    assert attempted.outcome is not None and attempted.outcome.status == 204
    (got,) = receiver.answered()
    assert got.headers["webhook-id"] == delivery.delivery_id
    assert got.headers["content-type"] == "application/json"
    body = json.loads(got.body)
    assert body == {
        "type": "user_group.created",
        "timestamp": body["data"]["at"],
        "data": audit.as_dict(event),
    }
    verified = standardwebhooks.Webhook(secret).verify(got.body, got.headers)
    assert verified["data"]["id"] == event.event_id
    # svix's verifier (which reads svix-* or webhook-* headers) raises on a bad signature.
    svix.webhooks.Webhook(secret).verify(got.body, got.headers)
    renamed = {name.replace("webhook-", "svix-"): value for name, value in got.headers.items()}
    svix.webhooks.Webhook(secret).verify(got.body, renamed)
    with pytest.raises(svix.webhooks.WebhookVerificationError):
        svix.webhooks.Webhook(secret).verify(got.body + b" ", got.headers)
    with pytest.raises(standardwebhooks.WebhookVerificationError):
        standardwebhooks.Webhook(make_webhook(workspace, receiver.url)[1]).verify(
            got.body, got.headers
        )
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts, delivery.last_status_code) == ("delivered", 1, 204)
    assert deliveries.attempt(delivery.delivery_id).outcome is None  # done: never sent again
    assert len(receiver.answered()) == 1


@allow_private(WEBHOOK_MAX_ATTEMPTS=3, WEBHOOK_DISABLE_AFTER_FAILURES=2)
def test_failures_retry_with_the_same_id_then_fail_then_disable_the_webhook(workspace, receiver):
    receiver.behaviour = Behaviour(status=500, body=b"x" * 5000)
    webhook, _ = make_webhook(workspace, receiver.url)
    for round_ in (1, 2):
        _, delivery, attempted = deliver_one(workspace, receiver.url)
        assert attempted.retry_at is not None
        assert attempted.retry_at - timezone.now() <= timedelta(seconds=10)  # the first: < 15 s
        for number in (2, 3):
            WebhookDelivery.objects.filter(pk=delivery.pk).update(next_attempt_at=timezone.now())
            attempted = deliveries.attempt(delivery.delivery_id)
            assert (attempted.retry_at is None) == (number == 3)
        delivery.refresh_from_db()
        assert (delivery.status, delivery.attempts, delivery.last_status_code) == ("failed", 3, 500)
        assert len(delivery.last_response) == 200  # a short excerpt only
        webhook.refresh_from_db()
        assert webhook.disabled == (round_ == 2)
    ids = [got.headers["webhook-id"] for got in receiver.answered()]
    assert len(ids) == 6 and len(set(ids)) == 2 and ids[0] == ids[1] == ids[2]
    disabled = AuditEvent.objects.get(action="webhook.disabled")
    assert disabled.actor_type == "system" and disabled.details["webhook_id"] == webhook.webhook_id
    # Disabled: new events are not put in its outbox.
    event = audit.record(workspace.pk, audit.USER_GROUP_CREATED)
    assert not WebhookDelivery.objects.filter(event=event).exists()


@allow_private()
def test_a_success_resets_the_failure_count(workspace, receiver):
    webhook, _ = make_webhook(workspace, receiver.url)
    Webhook.objects.filter(pk=webhook.pk).update(consecutive_failures=3)
    deliver_one(workspace, receiver.url)
    webhook.refresh_from_db()
    assert webhook.consecutive_failures == 0


def test_backoff_is_exponential_capped_and_jittered():
    with override_settings(
        USERGROUPS={"WEBHOOK_RETRY_BASE_SECONDS": 10, "WEBHOOK_RETRY_MAX_SECONDS": 60}
    ):
        waits = [deliveries.backoff(n).total_seconds() for n in (1, 2, 3, 10) for _ in range(50)]
    first, second, third, late = (waits[i * 50 : (i + 1) * 50] for i in range(4))
    assert 5 <= min(first) and max(first) <= 10
    assert 10 <= min(second) and max(second) <= 20
    assert 20 <= min(third) and max(third) <= 40
    assert max(late) <= 60 and len(set(first)) > 1


@allow_private()
def test_redirects_are_not_followed(workspace, receiver):
    receiver.behaviour = Behaviour(status=302, location=receiver.url + "/elsewhere")
    make_webhook(workspace, receiver.url)
    _, delivery, attempted = deliver_one(workspace, receiver.url)
    assert attempted.outcome is not None and attempted.outcome.status == 302
    assert attempted.retry_at is not None
    assert [got.path for got in receiver.answered()] == ["/hook"]


@allow_private(WEBHOOK_TIMEOUT_SECONDS=0.3)
def test_a_receiver_that_hangs_times_out(workspace, receiver):
    receiver.behaviour = Behaviour(delay=1.5)
    make_webhook(workspace, receiver.url)
    _, delivery, attempted = deliver_one(workspace, receiver.url)
    assert attempted.outcome is not None and attempted.outcome.status is None
    assert "timed out" in attempted.outcome.excerpt
    assert attempted.retry_at is not None


@allow_private(WEBHOOK_TIMEOUT_SECONDS=0.5)
def test_a_receiver_that_trickles_its_answer_is_cut_at_the_timeout(workspace, receiver):
    """Each read gets a byte within the timeout; the whole answer would take 8 s."""
    receiver.behaviour = Behaviour(status=200, body=b"x" * 40, trickle=0.1)
    make_webhook(workspace, receiver.url)
    started = time.monotonic()
    _, delivery, attempted = deliver_one(workspace, receiver.url)
    took = time.monotonic() - started
    assert attempted.outcome == sending.Outcome(None, "No answer: timed out")
    assert attempted.retry_at is not None
    assert took < 3  # the timeout (0.5 s), not the answer's 8 s
    assert len(receiver.answered()) == 1


@allow_private(WEBHOOK_CONNECT_TIMEOUT_SECONDS=0.3, WEBHOOK_TIMEOUT_SECONDS=5)
def test_an_address_that_never_connects_fails_at_the_connect_timeout(workspace):
    with unreachable_url() as url:
        make_webhook(workspace, url)
        _, delivery, attempted = deliver_one(workspace, url)
    assert attempted.outcome is not None and attempted.outcome.status is None
    assert attempted.outcome.excerpt == "No answer: connecting timed out"
    assert attempted.retry_at is not None


@allow_private()
def test_one_attempt_at_a_time_is_in_flight_to_a_webhook(workspace, receiver):
    webhook, _ = make_webhook(workspace, receiver.url)
    now = timezone.now()
    assert deliveries.hold(webhook, now) is not None  # an attempt in flight on another worker
    assert deliveries.hold(webhook, now) is None
    delivery = WebhookDelivery.objects.get(
        event=audit.record(workspace.pk, audit.USER_GROUP_CREATED)
    )
    attempted = deliveries.attempt(delivery.delivery_id, first=True)
    assert attempted.outcome is None and receiver.answered() == []
    assert attempted.retry_at is not None and not attempted.behind  # its turn comes soon
    assert attempted.retry_at - timezone.now() <= timedelta(seconds=1)
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts) == ("pending", 0)  # not an attempt
    assert delivery.next_attempt_at == attempted.retry_at
    # Another task of it (the sweeper's) ends: the one that put it off enqueued its turn.
    assert deliveries.attempt(delivery.delivery_id, first=True) == deliveries.Attempted(None)
    # The other worker died mid-send: its hold ends with its lease, and the turn comes.
    Webhook.objects.filter(pk=webhook.pk).update(sending_until=now)
    WebhookDelivery.objects.filter(pk=delivery.pk).update(next_attempt_at=timezone.now())
    assert deliveries.attempt(delivery.delivery_id).outcome.status == 204
    webhook.refresh_from_db()
    assert (webhook.sending_until, webhook.failing) == (None, False)


def ready_tasks() -> list[tuple[str, str, int]]:
    """The tasks a worker would run now, in the order it takes them."""
    return [
        (result.task_path.rsplit(".", 1)[1], result.args_kwargs["args"][0], result.priority)
        for result in DBTaskResult.objects.ready()
    ]


def run_task(task, delivery_id: str) -> None:
    """Take the first queued ``task`` of ``delivery_id`` off the queue and run it, as a
    worker would."""
    queued = [
        result.pk
        for result in DBTaskResult.objects.ready()
        if result.task_path == task.module_path and result.args_kwargs["args"] == [delivery_id]
    ]
    assert queued, f"no {task.name} queued for {delivery_id}"
    DBTaskResult.objects.filter(pk=queued[0]).delete()
    task.call(delivery_id)


@allow_private(WEBHOOK_TIMEOUT_SECONDS=0.3)
def test_a_hanging_webhooks_deliveries_go_behind_the_others(
    workspace, receiver, django_capture_on_commit_callbacks
):
    with hanging_receiver() as hanging:
        hung, _ = make_webhook(workspace, hanging.url)  # registered first: its tasks come first
        healthy, _ = make_webhook(workspace, receiver.url)
        for _event in range(2):
            DBTaskResult.objects.all().delete()
            with django_capture_on_commit_callbacks(execute=True):
                event = audit.record(workspace.pk, audit.USER_GROUP_CREATED)
            to_hung = WebhookDelivery.objects.get(event=event, webhook=hung).delivery_id
            to_healthy = WebhookDelivery.objects.get(event=event, webhook=healthy).delivery_id
            assert ready_tasks() == [
                ("deliver_webhook", to_hung, 0),
                ("deliver_webhook", to_healthy, 0),
            ]
            run_task(tasks.deliver_webhook, to_hung)
        # The first timed out; the second was not sent: it waits behind the healthy one.
        assert hanging.connections() == 1
        assert ready_tasks() == [
            ("deliver_webhook", to_healthy, 0),
            ("retry_webhook", to_hung, tasks.BEHIND_PRIORITY),
        ]
        run_task(tasks.deliver_webhook, to_healthy)
        assert WebhookDelivery.objects.get(delivery_id=to_healthy).status == "delivered"
        hung.refresh_from_db()
        healthy.refresh_from_db()
        assert (hung.failing, healthy.failing) == (True, False)
        # Its turn, when nothing else waits, is sent (and times out again).
        run_task(tasks.retry_webhook, to_hung)
        assert hanging.connections() == 2
        retried = WebhookDelivery.objects.get(delivery_id=to_hung)
        assert (retried.attempts, retried.last_response) == (1, "No answer: timed out")


@allow_private()
def test_copies_of_a_deliverys_task_end_once_it_is_sent(workspace, receiver):
    """The sweeper enqueues a delivery again while it waits behind others: each copy of
    its task goes behind as one task at most, and once it is sent every copy ends."""
    webhook, _ = make_webhook(workspace, receiver.url)
    Webhook.objects.filter(pk=webhook.pk).update(failing=True)
    event = audit.record(workspace.pk, audit.USER_GROUP_CREATED)
    delivery_id = WebhookDelivery.objects.get(event=event).delivery_id
    DBTaskResult.objects.all().delete()
    for _copy in range(3):
        tasks.deliver_webhook.enqueue(delivery_id)
    for _copy in range(3):
        run_task(tasks.deliver_webhook, delivery_id)
    queued = ready_tasks()
    assert 1 <= len(queued) <= 3
    assert set(queued) == {("retry_webhook", delivery_id, tasks.BEHIND_PRIORITY)}
    for _copy in queued:
        run_task(tasks.retry_webhook, delivery_id)
    assert len(receiver.answered()) == 1
    assert WebhookDelivery.objects.get(delivery_id=delivery_id).status == "delivered"
    assert ready_tasks() == []


@allow_private()
def test_a_receiver_that_is_down_is_retried(workspace):
    with running_receiver() as gone:
        url = gone.url
    make_webhook(workspace, url)
    _, delivery, attempted = deliver_one(workspace, url)
    assert attempted.outcome is not None and attempted.outcome.status is None
    assert attempted.retry_at is not None


def test_a_delivery_refuses_a_private_address_when_private_is_not_allowed(workspace, receiver):
    # Registered while allowed (e.g. a setting changed since): refused at delivery.
    with allow_private():
        make_webhook(workspace, receiver.url)
    _, delivery, attempted = deliver_one(workspace, receiver.url)
    assert attempted.outcome is not None and attempted.outcome.excerpt.startswith("Refused")
    assert receiver.answered() == []


def test_dns_rebinding_is_refused_at_delivery(workspace, receiver, dns):
    """A name that resolved to a public address at registration and to loopback later."""
    port = int(receiver.url.rsplit(":", 1)[1].split("/")[0])
    dns["hooks.example.com"] = "203.0.114.10"
    url = f"https://hooks.example.com:{port}/hook"
    assert addresses.resolve(url, allow_private=False).address == "203.0.114.10"
    make_webhook(workspace, url)
    dns["hooks.example.com"] = "127.0.0.1"
    _, delivery, attempted = deliver_one(workspace, url)
    assert attempted.outcome is not None
    assert attempted.outcome.excerpt.startswith(
        "Refused: The host resolves to an address that is not public"
    )
    assert receiver.answered() == []


# IPv6 addresses that carry an IPv4 one (CONTRACT 8a, issue 27): each with the IPv4 it
# reaches, judged by that IPv4 address.
CARRYING_PRIVATE_IPV4 = [
    "64:ff9b::a9fe:a9fe",  # NAT64 of 169.254.169.254 (cloud metadata)
    "64:ff9b::10.0.0.1",  # NAT64 of 10.0.0.1
    "64:ff9b:1::a00:1",  # local-use NAT64 (/96) of 10.0.0.1
    "64:ff9b:1:a00:0:100::",  # local-use NAT64 (/48) of 10.0.0.1
    "2002:7f00:1::1",  # 6to4 of 127.0.0.1
    "2002:a00:1::",  # 6to4 of 10.0.0.1
    "::127.0.0.1",  # IPv4-compatible loopback
    "::a9fe:a9fe",  # IPv4-compatible 169.254.169.254
    "::ffff:169.254.169.254",  # IPv4-mapped
    "::ffff:a00:1",  # IPv4-mapped 10.0.0.1, in hex
    "::ffff:0:7f00:1",  # IPv4-translated (RFC 2765) 127.0.0.1
    "::ffff:0:a9fe:a9fe",  # IPv4-translated 169.254.169.254
    "2001:0:808:808::f5ff:fffe",  # Teredo: server 8.8.8.8, client 10.0.0.1
    "2001:0:a00:1::f7f7:f7f7",  # Teredo: server 10.0.0.1, client 8.8.8.8
]


@pytest.mark.parametrize("address", CARRYING_PRIVATE_IPV4)
def test_registration_refuses_an_ipv6_address_that_carries_a_private_ipv4(api_client, dns, address):
    dns["carrier.example.com"] = address
    for url in (f"https://[{address}]/hook", "https://carrier.example.com/hook"):
        response = send(api_client, "POST", {**GOOD, "url": url}, HOOK)
        error = assert_error(response, 400, "invalid", ["url"])
        assert "WEBHOOK_ALLOW_PRIVATE" in error["fields"]["url"][0], url
    assert not Webhook.objects.exists()


@pytest.mark.parametrize("address", CARRYING_PRIVATE_IPV4)
def test_a_delivery_refuses_a_name_that_now_resolves_to_a_carried_private_ipv4(
    workspace, dns, address
):
    dns["hooks.example.com"] = "203.0.114.10"
    make_webhook(workspace, "https://hooks.example.com/hook")
    dns["hooks.example.com"] = address
    _, delivery, attempted = deliver_one(workspace, "https://hooks.example.com/hook")
    assert attempted.outcome is not None
    assert attempted.outcome.excerpt.startswith(
        "Refused: The host resolves to an address that is not public"
    ), attempted.outcome.excerpt
    assert "WEBHOOK_ALLOW_PRIVATE" in attempted.outcome.excerpt
    assert attempted.retry_at is not None  # not sent, counted as a failed attempt


@pytest.mark.parametrize(
    ("address", "public"),
    [
        ("8.8.8.8", True),
        ("2606:4700::1111", True),
        ("10.0.0.1", False),
        ("172.16.5.4", False),
        ("192.168.1.1", False),
        ("127.0.0.1", False),
        ("169.254.169.254", False),
        ("100.64.0.1", False),
        ("0.0.0.0", False),
        ("224.0.0.1", False),
        ("255.255.255.255", False),
        ("::1", False),
        ("fe80::1", False),
        ("fc00::1", False),
        ("::ffff:10.0.0.1", False),
        ("198.18.0.1", False),
        *((address, False) for address in CARRYING_PRIVATE_IPV4),
        ("::ffff:8.8.8.8", True),  # judged by the IPv4 each carries
        ("::8.8.8.8", True),
        ("::ffff:0:808:808", True),
        ("64:ff9b::808:808", True),
        ("2002:808:808::1", True),
        ("2001:0:808:808::f7f7:f7f7", True),  # Teredo: server and client 8.8.8.8
        ("::", False),
        ("::1", False),
        ("64:ff9b::e000:1", False),  # NAT64 of 224.0.0.1 (multicast)
    ],
)
def test_only_global_unicast_addresses_are_public(address, public):
    assert addresses.is_public(address) is public


# A worker's lanes ---------------------------------------------------------------------------


#: When a failed attempt in these tests is retried.
RETRY_AT = timezone.now() + timedelta(seconds=30)
ANSWERED = sending.Outcome(204, "")


class Turns:
    """Lanes whose turns are recorded, in order, taken or put off: the turns of ``hold``
    wait for their event to be set, and each taken turn ends with ``outcome``."""

    def __init__(self, hold=(), outcome=ANSWERED):
        self.outcome = outcome
        self.hold = {delivery_id: threading.Event() for delivery_id in hold}
        self.taken: list[str] = []
        self.put_off: list[tuple[str, object]] = []
        self.started = threading.Semaphore(0)
        self.lanes = Lanes(
            self.take, lambda delivery_id, until: self.put_off.append((delivery_id, until))
        )

    def take(self, delivery_id, first):
        self.taken.append(delivery_id)
        self.started.release()
        if delivery_id in self.hold:
            assert self.hold[delivery_id].wait(10)
        retry_at = None if self.outcome.delivered else RETRY_AT
        return deliveries.Attempted(self.outcome, retry_at=retry_at)

    def wait_until_taken(self, count):
        for _ in range(count):
            assert self.started.acquire(timeout=10)

    def wait_until_done(self):
        with self.lanes.changed:
            assert self.lanes.changed.wait_for(lambda: not self.lanes.waiting, 10)


def test_a_lane_per_webhook_each_taking_its_turns_in_order_at_most_so_many_lanes():
    turns = Turns(hold=("a1", "b1"))
    turns.lanes.give(1, "a1", True, most=2)
    turns.lanes.give(1, "a2", True, most=2)  # behind a1, in its lane
    turns.lanes.give(2, "b1", True, most=2)  # sent while a1 hangs
    turns.wait_until_taken(2)
    assert sorted(turns.taken) == ["a1", "b1"]
    third = threading.Thread(target=turns.lanes.give, args=(3, "c1", True, 2))
    third.start()  # a third webhook waits for a lane
    third.join(0.3)
    assert third.is_alive() and sorted(turns.taken) == ["a1", "b1"]
    turns.lanes.give(1, "a2", False, most=2)  # given twice while it waits: taken once
    turns.hold["a1"].set()
    turns.wait_until_taken(1)
    assert turns.taken[2] == "a2"
    turns.wait_until_taken(1)  # webhook 1's lane ended: c1 has its own
    third.join(10)
    assert turns.taken[3] == "c1"
    turns.hold["b1"].set()
    turns.wait_until_done()
    assert sorted(turns.taken) == ["a1", "a2", "b1", "c1"]
    assert turns.put_off == []


def test_the_turns_behind_a_failed_attempt_are_put_off_to_its_retry():
    turns = Turns(hold=("a1",), outcome=sending.Outcome(None, "No answer: timed out"))
    for delivery_id in ("a1", "a2", "a3"):
        turns.lanes.give(1, delivery_id, True, most=2)
    turns.wait_until_taken(1)
    turns.hold["a1"].set()
    turns.wait_until_done()
    assert turns.taken == ["a1"]  # the lane held by one attempt only
    assert turns.put_off == [("a2", RETRY_AT), ("a3", RETRY_AT)]


def test_at_exit_a_lane_ends_its_attempt_and_takes_no_other_turn():
    turns = Turns(hold=("a1",))
    turns.lanes.give(1, "a1", True, most=2)
    turns.lanes.give(1, "a2", True, most=2)
    turns.wait_until_taken(1)
    stopping = threading.Thread(target=turns.lanes.stop)
    stopping.start()
    stopping.join(0.3)
    assert stopping.is_alive()  # it waits for the attempt in flight
    turns.hold["a1"].set()
    stopping.join(10)
    assert not stopping.is_alive()
    assert turns.taken == ["a1"]  # a2 stays pending, for the sweeper


# The sweeper and redelivery -----------------------------------------------------------------


def test_the_sweeper_enqueues_what_was_left_pending(workspace):
    make_webhook(workspace, PUBLIC_URL)
    event = audit.record(workspace.pk, audit.USER_GROUP_CREATED)
    delivery = WebhookDelivery.objects.get(event=event)
    # Overdue by more than a lease (60 s by default): its task was lost.
    overdue = timezone.now() - timedelta(seconds=61)
    WebhookDelivery.objects.filter(pk=delivery.pk).update(next_attempt_at=overdue)
    later = WebhookDelivery.objects.create(
        delivery_id=outbox.new_delivery_id(),
        webhook=delivery.webhook,
        event=audit.record(workspace.pk, audit.API_KEY_CREATED),
        next_attempt_at=timezone.now() - timedelta(seconds=30),  # a retry due, its task queued
    )
    DBTaskResult.objects.all().delete()
    call_command("sweep_webhooks", verbosity=0)
    queued = [result.args_kwargs["args"] for result in DBTaskResult.objects.all()]
    assert [delivery.delivery_id] in queued and [later.delivery_id] not in queued


def test_the_sweeper_enqueues_retries_and_a_failing_webhooks_deliveries_behind(workspace):
    """Its tasks do not crowd out the retries they stand for (issue 27)."""
    answering, _ = make_webhook(workspace, PUBLIC_URL)
    failing, _ = make_webhook(workspace, PUBLIC_URL)
    Webhook.objects.filter(pk=failing.pk).update(failing=True)
    overdue = timezone.now() - timedelta(seconds=61)
    first, retried = (
        WebhookDelivery.objects.get(
            event=audit.record(workspace.pk, audit.USER_GROUP_CREATED), webhook=answering
        )
        for _ in range(2)
    )
    WebhookDelivery.objects.filter(webhook=answering).update(next_attempt_at=overdue)
    WebhookDelivery.objects.filter(pk=retried.pk).update(attempts=2)
    WebhookDelivery.objects.filter(webhook=failing).update(next_attempt_at=overdue)
    behind = {
        delivery.delivery_id for delivery in WebhookDelivery.objects.filter(webhook=failing)
    } | {retried.delivery_id}
    DBTaskResult.objects.all().delete()
    call_command("sweep_webhooks", verbosity=0)
    assert sorted(ready_tasks()) == sorted(
        [("deliver_webhook", first.delivery_id, 0)]
        + [("retry_webhook", delivery_id, tasks.BEHIND_PRIORITY) for delivery_id in behind]
    )


def test_a_claimed_delivery_is_not_sent_by_a_second_worker(workspace):
    make_webhook(workspace, PUBLIC_URL)
    event = audit.record(workspace.pk, audit.USER_GROUP_CREATED)
    delivery = WebhookDelivery.objects.get(event=event)
    now = timezone.now()
    assert deliveries.claim(delivery.delivery_id, now) is True
    assert deliveries.claim(delivery.delivery_id, now) is False


@allow_private()
def test_redeliver_sends_a_failed_delivery_again_with_its_id(
    workspace, receiver, django_capture_on_commit_callbacks
):
    make_webhook(workspace, receiver.url)
    event = audit.record(workspace.pk, audit.USER_GROUP_CREATED)
    delivery = WebhookDelivery.objects.get(event=event)
    WebhookDelivery.objects.filter(pk=delivery.pk).update(status="failed", attempts=8)
    with django_capture_on_commit_callbacks(execute=True):
        assert deliveries.redeliver([delivery.pk]) == 1
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts) == ("pending", 0)
    tasks.deliver_webhook.call(delivery.delivery_id)
    delivery.refresh_from_db()
    assert delivery.status == "delivered"
    assert receiver.answered()[0].headers["webhook-id"] == delivery.delivery_id


# Settings -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "given",
    [
        {"WEBHOOK_ALLOW_PRIVATE": "yes"},
        {"WEBHOOK_TIMEOUT_SECONDS": 0},
        {"WEBHOOK_TIMEOUT_SECONDS": "5"},
        {"WEBHOOK_RETRY_BASE_SECONDS": 16},
        {"WEBHOOK_RETRY_MAX_SECONDS": -1},
        {"WEBHOOK_LEASE_SECONDS": True},
        {"WEBHOOK_TASK_BACKEND": ""},
        {"WEBHOOK_TIMEOUT_SECONDS": 30, "WEBHOOK_LEASE_SECONDS": 30},
        {"WEBHOOK_CONNECT_TIMEOUT_SECONDS": 0},
        {"WEBHOOK_CONNECT_TIMEOUT_SECONDS": "3"},
        {"WEBHOOK_CONNECT_TIMEOUT_SECONDS": None},
        # Connecting and reading may take 40 s: a lease of 35 s could end mid-send.
        {
            "WEBHOOK_CONNECT_TIMEOUT_SECONDS": 10,
            "WEBHOOK_TIMEOUT_SECONDS": 30,
            "WEBHOOK_LEASE_SECONDS": 35,
        },
    ],
)
def test_bad_webhook_settings_are_reported(given):
    with override_settings(USERGROUPS=given):
        assert [error.id for error in check_webhook_settings(None)] == ["usergroups.E011"]


def test_good_webhook_settings_pass():
    with override_settings(
        USERGROUPS={"WEBHOOK_ALLOW_PRIVATE": True, "WEBHOOK_TIMEOUT_SECONDS": 0.5}
    ):
        assert check_webhook_settings(None) == []


def test_the_log_guard_knows_a_webhook_secret(workspace):
    _, secret = make_webhook(workspace, PUBLIC_URL)
    assert secrets_in(f"secret={secret}.") == [secret]


def test_no_delivery_row_holds_a_secret(workspace, api_client):
    created = register(api_client)
    audit.record(workspace.pk, audit.USER_GROUP_CREATED)
    rows = json.dumps(list(WebhookDelivery.objects.values()), default=str)
    events = json.dumps(list(AuditEvent.objects.values()), default=str)
    assert created["secret"] not in rows + events
    assert isinstance(Workspace.objects.get(pk=workspace.pk), Workspace)
    assert connection.vendor  # the database these ran on


def test_resealing_after_a_secret_rotation_keeps_the_webhook_secret(workspace, settings):
    _, secret = make_webhook(workspace, PUBLIC_URL)
    old = settings.SECRET_KEY
    settings.SECRET_KEY, settings.SECRET_KEY_FALLBACKS = "n" * 50, [old]
    before = Webhook.objects.get().secret_sealed
    out = io.StringIO()
    call_command("reseal_group_tokens", stdout=out)
    assert "Resealed 1 webhook secret(s)." in out.getvalue()
    row = Webhook.objects.get()
    assert row.secret_sealed != before and row.secret() == secret
    settings.SECRET_KEY_FALLBACKS = []
    assert Webhook.objects.get().secret() == secret  # opens with the new secret alone
