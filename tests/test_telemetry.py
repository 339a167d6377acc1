"""The app's metrics and spans (usergroups.telemetry, docs/observability.md), read with the
OpenTelemetry SDK's in-memory reader while the real doors work: the API, host views behind
embed tokens, the management commands, webhook attempts to a real receiver."""

import io
import os
import subprocess
import sys

import pytest
from django.core.management import call_command
from django.test import override_settings
from django.utils import timezone
from opentelemetry import trace
from opentelemetry.trace import SpanKind, StatusCode

from tests.support import ROOT
from tests.support.api import client_for, get_or_create, rotate
from tests.support.embed import SalesView, clock_moved, dashboard, minted, revoke
from tests.support.webhook_receiver import Behaviour, running_receiver, unreachable_url
from usergroups import telemetry
from usergroups.models import Webhook, WebhookDelivery
from usergroups.services import audit
from usergroups.webhooks import deliveries, registry

VERIFICATIONS = "usergroups.embed.verifications"
VERIFICATION_DURATION = "usergroups.embed.verification.duration"
OUTCOME, CODE, REASON = telemetry.OUTCOME, telemetry.REFUSAL_CODE, telemetry.REFUSAL_REASON


def refusal(code: str, reason: str) -> dict[str, str]:
    return {OUTCOME: "refused", CODE: code, REASON: reason}


def verified(telemetry_reader) -> list[dict]:
    """The attributes of each verification counted, in no particular order."""
    counted = [
        point.attributes
        for point in telemetry_reader.collect()
        if point.instrument == VERIFICATIONS
        for _ in range(int(point.value))
    ]
    return sorted(counted, key=str)


# Verification: every refusal code, each reason ------------------------------------------


def test_an_accepted_token_is_counted_and_timed(api_client, group, telemetry_reader):
    token = minted(api_client, group.provided_id)
    assert dashboard(token).status_code == 200
    assert verified(telemetry_reader) == [{OUTCOME: "accepted"}]
    assert telemetry_reader.by(VERIFICATION_DURATION, OUTCOME) == {"accepted": 1}


def test_no_embed_header_is_no_verification(db, telemetry_reader):
    assert dashboard(None).status_code == 401
    assert telemetry_reader.total(VERIFICATIONS) == 0


def test_a_malformed_or_forged_token_is_refused_as_invalid(api_client, group, telemetry_reader):
    token = minted(api_client, group.provided_id)
    header, payload, signature = token.split(".")
    forged = f"{header}.{payload}.{signature[::-1]}"
    for bad in ("not-a-token", forged):
        assert dashboard(bad).status_code == 401
    assert verified(telemetry_reader) == [refusal("authentication_failed", "invalid")] * 2
    assert telemetry_reader.by(VERIFICATION_DURATION, OUTCOME) == {"refused": 2}


def test_an_expired_token_is_refused_as_expired(api_client, group, telemetry_reader):
    with clock_moved(-3600):
        token = minted(api_client, group.provided_id, expires_in=60)
    assert dashboard(token).status_code == 401
    assert verified(telemetry_reader) == [refusal("token_expired", "expired")]


def test_a_revoked_token_is_refused_as_revoked(api_client, group, telemetry_reader):
    token = minted(api_client, group.provided_id)
    assert revoke(api_client, {"user_group_id": group.provided_id}).status_code == 200
    assert dashboard(token).status_code == 401
    assert verified(telemetry_reader) == [refusal("authentication_failed", "revoked")]


def test_a_token_without_origin_where_one_is_required(api_client, group, telemetry_reader):
    token = minted(api_client, group.provided_id)
    with override_settings(USERGROUPS={"EMBED_REQUIRE_ORIGIN": True}):
        assert dashboard(token).status_code == 401
    assert verified(telemetry_reader) == [refusal("authentication_failed", "origin_required")]


def test_another_origin_and_another_resource_are_refused(api_client, group, telemetry_reader):
    locked = minted(api_client, group.provided_id, origin="https://app.example.com")
    assert dashboard(locked, HTTP_ORIGIN="https://evil.example.com").status_code == 403
    other = minted(api_client, group.provided_id, resource="inventory")
    assert dashboard(other, view=SalesView).status_code == 403
    assert verified(telemetry_reader) == [
        refusal("origin_not_allowed", "origin"),
        refusal("permission_denied", "resource"),
    ]


def test_the_workspace_is_named_only_where_the_setting_allows(api_client, group, telemetry_reader):
    token = minted(api_client, group.provided_id)
    with override_settings(USERGROUPS={"TELEMETRY_WORKSPACE": True}):
        dashboard(token)
        minted(api_client, group.provided_id)
    dashboard(token)
    assert verified(telemetry_reader) == [
        {OUTCOME: "accepted", telemetry.WORKSPACE: group.workspace_id},
        {OUTCOME: "accepted"},
    ]
    mints = telemetry_reader.by("usergroups.embed.mints", telemetry.WORKSPACE)
    assert mints == {None: 1, group.workspace_id: 1}


# Mints, revocations, rotations, get-or-create ------------------------------------------


def test_mints_are_counted_for_a_group_and_for_a_person(api_client, group, telemetry_reader):
    minted(api_client, group.provided_id)
    minted(api_client, group.provided_id, end_user={"id": "ann"})
    minted(api_client, group.provided_id, end_user={"id": "ann"})
    assert telemetry_reader.by("usergroups.embed.mints", telemetry.END_USER) == {
        False: 1,
        True: 2,
    }


def test_each_revocation_axis_is_counted(api_client, api_key, group, telemetry_reader):
    token = minted(api_client, group.provided_id, end_user={"id": "ann"})
    for body in (
        {"user_group_id": group.provided_id},
        {"end_user_id": "ann"},
        {"all": True},
    ):
        assert revoke(api_client, body).status_code == 200
    fresh = minted(api_client, group.provided_id)
    assert revoke(api_client, {"embed_token": fresh}).status_code == 200
    minted(api_client, group.provided_id, end_user={"id": "ann"}, exclusive=True)
    assert (
        revoke(api_client, {"embed_token": token}).status_code == 404
    )  # not live: nothing revoked
    call_command("revoke_api_key", api_key.prefix, stdout=io.StringIO())
    assert telemetry_reader.by("usergroups.embed.revocations", telemetry.AXIS) == {
        "user_group": 1,
        "end_user": 2,  # the revocation, and the exclusive mint's
        "all": 1,
        "embed_token": 1,
        "api_key": 1,
    }


def test_rotations_of_group_tokens_and_api_keys(api_client, api_key, group, telemetry_reader):
    assert rotate(api_client, {"current_token": group.token}).status_code == 200
    assert rotate(api_client, {"current_token": group.token}).status_code != 200  # gone
    call_command("rotate_api_key", api_key.prefix, stdout=io.StringIO())
    assert telemetry_reader.by("usergroups.rotations", telemetry.CREDENTIAL) == {
        "group_token": 1,
        "api_key": 1,
    }


def test_get_or_create_is_counted_by_whether_it_created(api_client, telemetry_reader):
    for _ in range(3):
        assert get_or_create(api_client, {"user_group_id": "acme"}).status_code == 200
    assert telemetry_reader.by("usergroups.group.get_or_create.calls", telemetry.CREATED) == {
        True: 1,
        False: 2,
    }


def test_every_audit_write_is_timed(api_client, telemetry_reader):
    get_or_create(api_client, {"user_group_id": "acme"})  # user_group.created
    minted(api_client, "acme")  # embed_token.minted
    (point,) = [
        p for p in telemetry_reader.collect() if p.instrument == "usergroups.audit.write.duration"
    ]
    assert (point.unit, point.count) == ("s", 2)
    assert 0 < point.value < 10


# Webhooks --------------------------------------------------------------------------------


@pytest.fixture
def private_webhooks():
    with override_settings(
        USERGROUPS={
            "WEBHOOK_ALLOW_PRIVATE": True,
            "WEBHOOK_TIMEOUT_SECONDS": 2,
            "WEBHOOK_CONNECT_TIMEOUT_SECONDS": 0.5,
            "WEBHOOK_MAX_ATTEMPTS": 2,
            "WEBHOOK_DISABLE_AFTER_FAILURES": 1,
        }
    ):
        yield


def an_event_for(workspace, url: str) -> WebhookDelivery:
    """A webhook of ``workspace`` at ``url``, and a delivery of one event to it."""
    webhook, _secret = registry.create_webhook(workspace.pk, url, ["user_group"])
    event = audit.record(workspace.pk, audit.USER_GROUP_CREATED, user_group_id="acme")
    return WebhookDelivery.objects.get(event=event, webhook=webhook)


def attempt_again(delivery: WebhookDelivery) -> None:
    """The delivery's next attempt, now (its backoff skipped)."""
    WebhookDelivery.objects.filter(pk=delivery.pk).update(next_attempt_at=timezone.now())
    deliveries.attempt(delivery.delivery_id)


def test_a_delivered_webhook_counts_its_attempt_outcome_and_lag(
    workspace, private_webhooks, telemetry_reader
):
    with running_receiver() as receiver:
        delivery = an_event_for(workspace, receiver.url)
        assert telemetry_reader.total("usergroups.webhook.outbox.depth") == 1
        deliveries.attempt(delivery.delivery_id)
    assert telemetry_reader.by("usergroups.webhook.attempts", OUTCOME) == {"delivered": 1}
    assert telemetry_reader.by("usergroups.webhook.deliveries", OUTCOME) == {"delivered": 1}
    (lag,) = [
        p for p in telemetry_reader.collect() if p.instrument == "usergroups.webhook.delivery.lag"
    ]
    assert (lag.unit, lag.count) == ("s", 1) and 0 <= lag.value < 60
    assert telemetry_reader.total("usergroups.webhook.outbox.depth") == 0
    (attempt,) = telemetry_reader.spans("usergroups.webhook.attempt")
    assert attempt.kind == SpanKind.CLIENT
    assert attempt.attributes[telemetry.WEBHOOK_ID] == (delivery.delivery_id,)
    assert attempt.attributes["http.response.status_code"] == 204


def test_a_rejected_then_failed_delivery_disables_its_receiver(
    workspace, private_webhooks, telemetry_reader
):
    with running_receiver() as receiver:
        receiver.behaviour = Behaviour(status=500)
        delivery = an_event_for(workspace, receiver.url)
        deliveries.attempt(delivery.delivery_id)
        assert telemetry_reader.by("usergroups.webhook.receivers", telemetry.WEBHOOK_STATE) == {
            "failing": 1,
            "disabled": 0,
        }
        attempt_again(delivery)
    assert telemetry_reader.by("usergroups.webhook.attempts", OUTCOME) == {"rejected": 2}
    assert telemetry_reader.by("usergroups.webhook.deliveries", OUTCOME) == {"failed": 1}
    assert Webhook.objects.get().disabled
    assert telemetry_reader.by("usergroups.webhook.receivers", telemetry.WEBHOOK_STATE) == {
        "failing": 0,
        "disabled": 1,
    }
    assert [
        span.attributes["http.response.status_code"]
        for span in telemetry_reader.spans("usergroups.webhook.attempt")
    ] == [
        500,
        500,
    ]


def test_an_unanswered_attempt(workspace, private_webhooks, telemetry_reader):
    with unreachable_url() as url:
        delivery = an_event_for(workspace, url)
        deliveries.attempt(delivery.delivery_id)
    assert telemetry_reader.by("usergroups.webhook.attempts", OUTCOME) == {"unanswered": 1}
    assert telemetry_reader.total("usergroups.webhook.deliveries") == 0  # it will be retried
    (attempt,) = telemetry_reader.spans("usergroups.webhook.attempt")
    assert "http.response.status_code" not in attempt.attributes


# The read model's instruments (called by the read layer) ---------------------------------


def test_the_read_models_answers_and_what_it_forgot(telemetry_reader):
    telemetry.read_model_answered("embed token", "memory")
    telemetry.read_model_answered("embed token", "database")
    telemetry.read_model_answered("embed token", "memory")
    telemetry.read_model_forgot("group", 3)
    telemetry.read_model_forgot("connection_lost", 40)
    assert telemetry_reader.by("usergroups.read_model.answers", telemetry.SOURCE) == {
        "memory": 2,
        "database": 1,
    }
    assert (
        telemetry_reader.total("usergroups.read_model.answers", **{telemetry.READ: "embed token"})
        == 3
    )
    assert telemetry_reader.by("usergroups.read_model.forgotten", telemetry.REASON) == {
        "group": 3,
        "connection_lost": 40,
    }


READ_MODEL_GAUGES = {
    "usergroups.read_model.listening": "{process}",
    "usergroups.read_model.proof.age": "s",
    "usergroups.read_model.memory.entries": "{entry}",
    "usergroups.read_model.memory.usage": "By",
}


def test_the_read_models_gauges_read_the_callback_it_registers(telemetry_reader):
    state = {"listening": True, "proof_age_seconds": 1.5, "entries": 7, "bytes": 4096}
    registered = telemetry.observe_read_model(lambda: state)
    try:

        def gauges():
            return {
                point.instrument: (point.value, point.unit)
                for point in telemetry_reader.collect()
                if point.instrument in READ_MODEL_GAUGES
            }

        assert gauges() == {
            "usergroups.read_model.listening": (1, "{process}"),
            "usergroups.read_model.proof.age": (1.5, "s"),
            "usergroups.read_model.memory.entries": (7, "{entry}"),
            "usergroups.read_model.memory.usage": (4096, "By"),
        }
        state.update(listening=False, proof_age_seconds=None)
        telemetry_reader.start()
        assert gauges() == {
            "usergroups.read_model.listening": (0, "{process}"),
            "usergroups.read_model.memory.entries": (7, "{entry}"),
            "usergroups.read_model.memory.usage": (4096, "By"),
        }  # no proof yet: nothing to say of its age
    finally:
        telemetry.observe_read_model(registered)


# Spans -------------------------------------------------------------------------------------


def test_a_mint_and_a_revocation_are_spans_under_the_hosts_request_span(
    api_client, group, telemetry_reader
):
    host = trace.get_tracer("host")
    with host.start_as_current_span("POST /api/user/embed-token") as request_span:
        minted(api_client, group.provided_id)
    with host.start_as_current_span("POST /api/user/embed-token/revoke"):
        revoke(api_client, {"user_group_id": group.provided_id})
    (mint,) = telemetry_reader.spans("usergroups.embed.mint")
    assert mint.parent is not None
    assert mint.parent.span_id == request_span.get_span_context().span_id
    assert mint.context.trace_id == request_span.get_span_context().trace_id
    assert mint.instrumentation_scope.name == "usergroups"
    (revocation,) = telemetry_reader.spans("usergroups.embed.revoke")
    assert revocation.attributes[telemetry.AXIS] == "user_group"
    assert revocation.parent is not None and revocation.parent.span_id != mint.parent.span_id


def test_a_span_that_fails_says_its_error_type_never_its_message(db, telemetry_reader):
    with pytest.raises(ValueError), telemetry.span("usergroups.test", read="grant"):
        raise ValueError("a message that might quote what it was given")
    (failed,) = telemetry_reader.spans("usergroups.test")
    assert failed.status.status_code == StatusCode.ERROR
    assert failed.status.description is None
    assert dict(failed.attributes) == {
        "usergroups.read": "grant",
        "error.type": "builtins.ValueError",
    }
    assert failed.events == ()


def test_the_secret_guard_sees_a_secret_in_telemetry(api_client, group, telemetry_reader):
    token = minted(api_client, group.provided_id)
    assert telemetry_reader.leaks() == []
    with telemetry.span("usergroups.test", leaked=token):
        pass
    assert telemetry_reader.leaks() == [token[:8] + "…"]
    telemetry_reader.start()  # the session's guard would fail this test otherwise


def test_every_attribute_is_a_bounded_one(api_client, api_key, group, telemetry_reader):
    """Whatever the doors, the metrics' attributes are the documented ones only: no
    token, key, person, URL or id of anything."""
    token = minted(api_client, group.provided_id, end_user={"id": "ann@example.com"})
    dashboard(token)
    dashboard(token, HTTP_ORIGIN="https://elsewhere.example.com")
    dashboard("garbage")
    revoke(api_client, {"end_user_id": "ann@example.com"})
    rotate(api_client, {"current_token": group.token})
    get_or_create(client_for(api_key.key), {"user_group_id": "acme"})
    bounded = {
        telemetry.READ,  # the read layer's names of its reads
        telemetry.SOURCE,  # memory or database
        OUTCOME,
        CODE,
        REASON,
        telemetry.END_USER,
        telemetry.AXIS,
        telemetry.CREDENTIAL,
        telemetry.CREATED,
        telemetry.WEBHOOK_STATE,
    }
    seen = {key for point in telemetry_reader.collect() for key in point.attributes}
    assert seen and seen <= bounded, seen - bounded
    values = {str(v) for point in telemetry_reader.collect() for v in point.attributes.values()}
    assert not {group.provided_id, "ann@example.com", str(group.team_id)} & values


NO_SDK_SPAN = """
from opentelemetry import trace
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags, set_span_in_context
from opentelemetry.context import attach
from usergroups import telemetry

assert isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)
parent = NonRecordingSpan(SpanContext(0x1234, 0x5678, is_remote=True, trace_flags=TraceFlags(1)))
attach(set_span_in_context(parent))
with telemetry.span("usergroups.embed.mint") as opened:
    assert opened is parent, opened
    assert trace.get_current_span() is parent
with telemetry.webhook_attempt("msg_x") as opened:
    assert opened is parent, opened
print("ok")
"""


def test_without_an_sdk_a_span_is_the_current_one_as_the_api_would_make_it():
    """No SDK set (a process of its own: this one's tests set one): a span is what the API's
    no-op tracer would answer, the current span, with a propagated parent's context."""
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "example_project.settings"}
    env.pop("OTEL_PYTHON_TRACER_PROVIDER", None)
    code = "import django; django.setup()\n" + NO_SDK_SPAN
    answer = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )
    assert answer.stdout.strip() == "ok", answer.stderr
