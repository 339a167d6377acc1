"""Every metric and span of the app, on the OpenTelemetry API (docs/observability.md).

The code calls the small functions here (``telemetry.minted(...)``); this module alone
names instruments and attributes. Without an SDK configured by the host, the API's
instruments and tracer are no-ops, and nothing here needs setting up. With one, a host
sees what its SDK exports: ``meter`` and ``tracer`` are both named ``"usergroups"``.

Attributes are bounded: outcomes, codes, reasons and axes from closed lists, never a
token, key, secret, person or URL. The workspace's id is added only where
``USERGROUPS["TELEMETRY_WORKSPACE"]`` allows it (a site may have thousands).
"""

import functools
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from datetime import datetime
from typing import Any, ParamSpec, TypeVar

from django.db import DatabaseError, connections, router
from django.db.models import Count, Q
from django.utils import timezone
from opentelemetry import metrics, trace
from opentelemetry.metrics import CallbackOptions, Observation
from opentelemetry.trace import Span, SpanKind, StatusCode
from opentelemetry.util.types import AttributeValue

from usergroups import __version__
from usergroups.conf import usergroups_settings

P = ParamSpec("P")
R = TypeVar("R")

meter = metrics.get_meter("usergroups", __version__)
tracer = trace.get_tracer("usergroups", __version__)

# Attribute names (OpenTelemetry's: namespaced, dotted, snake_case).
OUTCOME = "usergroups.outcome"
REFUSAL_CODE = "usergroups.refusal.code"
REFUSAL_REASON = "usergroups.refusal.reason"
ERROR_TYPE = "error.type"  # OpenTelemetry's own: the exception's class
WORKSPACE = "usergroups.workspace.id"
READ = "usergroups.read"
SOURCE = "usergroups.source"
REASON = "usergroups.reason"
END_USER = "usergroups.end_user"
AXIS = "usergroups.axis"
CREDENTIAL = "usergroups.credential"
CREATED = "usergroups.created"
WEBHOOK_STATE = "usergroups.webhook.state"
# A webhook attempt is an HTTP client span: its header as OpenTelemetry names headers.
WEBHOOK_ID = "http.request.header.webhook-id"

# Bucket boundaries in seconds: OpenTelemetry's defaults are made for milliseconds.
FAST_SECONDS = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1)
LAG_SECONDS = (0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600, 21600, 86400)

verifications = meter.create_counter(
    "usergroups.embed.verifications",
    unit="{verification}",
    description="Embed tokens verified at authentication, by outcome and refusal.",
)
verification_duration = meter.create_histogram(
    "usergroups.embed.verification.duration",
    unit="s",
    description="Time to authenticate a request's embed token.",
    explicit_bucket_boundaries_advisory=FAST_SECONDS,
)
read_model_answers = meter.create_counter(
    "usergroups.read_model.answers",
    unit="{answer}",
    description="Reads of the read model, by what answered: memory or the database.",
)
read_model_forgotten = meter.create_counter(
    "usergroups.read_model.forgotten",
    unit="{entry}",
    description="Answers the read model forgot, by the reason.",
)
mints = meter.create_counter(
    "usergroups.embed.mints", unit="{token}", description="Embed tokens minted."
)
revocations = meter.create_counter(
    "usergroups.embed.revocations",
    unit="{revocation}",
    description="Revocations of embed tokens, by axis.",
)
rotations = meter.create_counter(
    "usergroups.rotations",
    unit="{rotation}",
    description="Group tokens and API keys rotated.",
)
gets_or_creates = meter.create_counter(
    "usergroups.group.get_or_create.calls",
    unit="{call}",
    description="Get-or-create calls, by whether they created the group.",
)
webhook_attempts = meter.create_counter(
    "usergroups.webhook.attempts",
    unit="{attempt}",
    description="Webhook attempts, by outcome: delivered, rejected (not 2xx), unanswered.",
)
webhook_deliveries = meter.create_counter(
    "usergroups.webhook.deliveries",
    unit="{delivery}",
    description="Webhook deliveries ended: delivered, or failed after their last attempt.",
)
webhook_lag = meter.create_histogram(
    "usergroups.webhook.delivery.lag",
    unit="s",
    description="Time from an event to its delivery's acknowledgement (a 2xx answer).",
    explicit_bucket_boundaries_advisory=LAG_SECONDS,
)
audit_write_duration = meter.create_histogram(
    "usergroups.audit.write.duration",
    unit="s",
    description="Time to write audit events and their webhook deliveries.",
    explicit_bucket_boundaries_advisory=FAST_SECONDS,
)


def _with_workspace(
    attributes: dict[str, AttributeValue], workspace_id: int | None
) -> dict[str, AttributeValue]:
    if workspace_id is not None and usergroups_settings.TELEMETRY_WORKSPACE is True:
        attributes[WORKSPACE] = workspace_id
    return attributes


# --- Verification (usergroups.auth.embed) ---------------------------------------------


def started() -> float:
    """The start of something timed here (a monotonic clock's seconds)."""
    return time.perf_counter()


def verification_accepted(since: float, workspace_id: int) -> None:
    verification_duration.record(time.perf_counter() - since, {OUTCOME: "accepted"})
    verifications.add(1, _with_workspace({OUTCOME: "accepted"}, workspace_id))


def verification_refused(since: float, code: str, reason: str) -> None:
    """A token refused with the API's error ``code``; ``reason``: which check refused it."""
    verification_duration.record(time.perf_counter() - since, {OUTCOME: "refused"})
    verifications.add(1, {OUTCOME: "refused", REFUSAL_CODE: code, REFUSAL_REASON: reason})


def verification_failed(since: float, error: BaseException) -> None:
    """Verification raised something else than a refusal (the database unreachable)."""
    verification_duration.record(time.perf_counter() - since, {OUTCOME: "error"})
    verifications.add(1, {OUTCOME: "error", ERROR_TYPE: _type_name(error)})


def _type_name(error: BaseException) -> str:
    kind = type(error)
    return f"{kind.__module__}.{kind.__qualname__}"


# --- The read model (usergroups.read_model) -------------------------------------------


def read_model_answered(read: str, source: str) -> None:
    """A read of the read model (``read``: its name) answered by ``source``: ``"memory"``
    or ``"database"``."""
    read_model_answers.add(1, {READ: read, SOURCE: source})


def read_model_forgot(reason: str, entries: int) -> None:
    """The read model forgot ``entries`` answers for ``reason``: what the change named
    (``group``, ``person``, ``key``, ``workspace``, ``denylist``, ``webhooks``), ``all``,
    or ``connection_lost``."""
    read_model_forgotten.add(entries, {REASON: reason})


#: What the read layer registers: called at each collection, it answers a mapping of
#: ``listening`` (bool), ``proof_age_seconds`` (float, or None without a proof),
#: ``entries`` (int) and ``bytes`` (int), or None when the process has no read model.
StateCallback = Callable[[], Mapping[str, Any] | None]
_read_model_state: StateCallback | None = None


def observe_read_model(callback: StateCallback | None) -> StateCallback | None:
    """Have the read model's gauges read ``callback`` (see :data:`StateCallback`); the
    callback it replaces."""
    global _read_model_state
    replaced, _read_model_state = _read_model_state, callback
    return replaced


def _read_model_gauge(
    field: str, convert: Callable[[Any], float]
) -> Callable[[CallbackOptions], Iterable[Observation]]:
    def observe(options: CallbackOptions) -> Iterable[Observation]:
        state = _read_model_state() if _read_model_state is not None else None
        if state is None or state.get(field) is None:
            return []
        return [Observation(convert(state[field]))]

    return observe


meter.create_observable_gauge(
    "usergroups.read_model.listening",
    callbacks=[_read_model_gauge("listening", int)],
    unit="{process}",
    description="1 while this process listens to the database, else 0.",
)
meter.create_observable_gauge(
    "usergroups.read_model.proof.age",
    callbacks=[_read_model_gauge("proof_age_seconds", float)],
    unit="s",
    description="Age of this process's last proof of hearing the database.",
)
meter.create_observable_gauge(
    "usergroups.read_model.memory.entries",
    callbacks=[_read_model_gauge("entries", int)],
    unit="{entry}",
    description="Answers this process's read model holds.",
)
meter.create_observable_gauge(
    "usergroups.read_model.memory.usage",
    callbacks=[_read_model_gauge("bytes", int)],
    unit="By",
    description="Bytes of answers this process's read model holds.",
)


# --- Embed tokens, groups, keys (usergroups.services) ---------------------------------


def minted(workspace_id: int, *, end_user: bool) -> None:
    """An embed token minted; ``end_user``: for a person."""
    mints.add(1, _with_workspace({END_USER: end_user}, workspace_id))


def revoked(axis: str, workspace_id: int) -> None:
    """Embed tokens revoked on ``axis``: ``user_group``, ``end_user``, ``embed_token``,
    ``all`` (the revoke endpoint's), or ``api_key``."""
    revocations.add(1, _with_workspace({AXIS: axis}, workspace_id))


def rotated(credential: str, workspace_id: int) -> None:
    """A ``"group_token"`` or an ``"api_key"`` rotated."""
    rotations.add(1, _with_workspace({CREDENTIAL: credential}, workspace_id))


def got_or_created(workspace_id: int, *, created: bool) -> None:
    gets_or_creates.add(1, _with_workspace({CREATED: created}, workspace_id))


# --- Webhooks (usergroups.webhooks) ---------------------------------------------------


@contextmanager
def webhook_attempt(delivery_id: str) -> Iterator[Span]:
    """The span of one webhook attempt (an HTTP client's), named by its ``webhook-id``."""
    attributes = {WEBHOOK_ID: (delivery_id,), "http.request.method": "POST"}
    with _span("usergroups.webhook.attempt", attributes, SpanKind.CLIENT) as span:
        yield span


def webhook_attempted(status: int | None) -> None:
    """An attempt answered with ``status`` (None: no answer), in the attempt's span."""
    if status is None:
        outcome = "unanswered"
    else:
        outcome = "delivered" if 200 <= status < 300 else "rejected"
        trace.get_current_span().set_attribute("http.response.status_code", status)
    webhook_attempts.add(1, {OUTCOME: outcome})


def webhook_delivered(event_at: datetime) -> None:
    """A delivery acknowledged; ``event_at``: when its event happened."""
    webhook_deliveries.add(1, {OUTCOME: "delivered"})
    webhook_lag.record(max((timezone.now() - event_at).total_seconds(), 0.0))


def webhook_failed() -> None:
    """A delivery given up after its last attempt."""
    webhook_deliveries.add(1, {OUTCOME: "failed"})


def _webhook_state(options: CallbackOptions) -> Iterable[Observation]:
    from usergroups.models import Webhook  # at collection: this module is imported early

    states = {"failing": Q(failing=True, disabled=False), "disabled": Q(disabled=True)}
    counts = _counted(
        Webhook,
        lambda rows: rows.aggregate(
            **{state: Count("pk", filter=where) for state, where in states.items()}
        ),
    )
    if counts is None:
        return []
    return [Observation(counts[state], {WEBHOOK_STATE: state}) for state in ("failing", "disabled")]


def _outbox_depth(options: CallbackOptions) -> Iterable[Observation]:
    from usergroups.models import WebhookDelivery

    pending = _counted(
        WebhookDelivery, lambda rows: rows.filter(status=WebhookDelivery.PENDING).count()
    )
    return [] if pending is None else [Observation(pending)]


def _counted(model: Any, count: Callable[[Any], Any]) -> Any:
    """``count(model's rows)`` for a gauge: None when the database fails (the gauge then
    says nothing). A connection it opens it closes: the reader may run on a thread of
    its own, which nothing else would close it on."""
    using = router.db_for_read(model)
    connection = connections[using]
    opened_here = connection.connection is None
    try:
        return count(model.objects.using(using))
    except DatabaseError:
        return None
    finally:
        if opened_here:
            connection.close()


meter.create_observable_gauge(
    "usergroups.webhook.receivers",
    callbacks=[_webhook_state],
    unit="{webhook}",
    description="Webhooks whose latest attempt failed (failing), and disabled ones.",
)
meter.create_observable_gauge(
    "usergroups.webhook.outbox.depth",
    callbacks=[_outbox_depth],
    unit="{delivery}",
    description="Webhook deliveries pending (not yet delivered nor failed).",
)


# --- The audit writer (usergroups.services.audit) -------------------------------------


def times_audit_writes(write: Callable[P, R]) -> Callable[P, R]:
    """Decorates the audit writer: each call's duration."""

    @functools.wraps(write)
    def timed(*args: P.args, **kwargs: P.kwargs) -> R:
        since = time.perf_counter()
        try:
            return write(*args, **kwargs)
        finally:
            audit_write_duration.record(time.perf_counter() - since)

    return timed


# --- Spans ----------------------------------------------------------------------------


@contextmanager
def span(name: str, **attributes: AttributeValue) -> Iterator[Span]:
    """A span named ``name`` in the current trace (under the host's request span when the
    host traces Django), each keyword an attribute ``usergroups.<keyword>``. An exception
    ends it with an error status and ``error.type``, never its message (which might
    quote what it was given)."""
    named = {f"usergroups.{key}": value for key, value in attributes.items()}
    with _span(name, named, SpanKind.INTERNAL) as opened:
        yield opened


@contextmanager
def _span(name: str, attributes: Mapping[str, AttributeValue], kind: SpanKind) -> Iterator[Span]:
    if isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider):
        # No SDK set yet: the API's span would be the current one again (recording
        # nothing), attached to the context and detached on every mint for nothing.
        yield trace.get_current_span()
        return
    with tracer.start_as_current_span(
        name,
        kind=kind,
        attributes=attributes,
        record_exception=False,
        set_status_on_exception=False,
    ) as opened:
        try:
            yield opened
        except Exception as error:
            opened.set_status(StatusCode.ERROR)
            opened.set_attribute(ERROR_TYPE, _type_name(error))
            raise


def spanned(name: str, **attributes: AttributeValue) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Decorates a function: each call in a :func:`span` of ``name`` and ``attributes``."""

    def decorate(function: Callable[P, R]) -> Callable[P, R]:
        @functools.wraps(function)
        def within_span(*args: P.args, **kwargs: P.kwargs) -> R:
            with span(name, **attributes):
                return function(*args, **kwargs)

        return within_span

    return decorate
