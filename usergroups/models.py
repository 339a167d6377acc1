"""Workspaces own API keys, user groups, end users, audit events and webhooks; user groups
own schema mappings; a webhook has a delivery per event it gets; revoked embed tokens
are remembered by their ``jti`` until they expire.

Rows are written by :mod:`usergroups.services`, never here.
"""

from typing import Any

from django.db import models
from django.utils import timezone
from django.utils.functional import cached_property

from usergroups import crypto
from usergroups.fields import ExactCharField, JSONTextField
from usergroups.scopes import SCOPES, field_name


class Workspace(models.Model):
    """The account that calls the API. Tenancy stops here: nothing crosses workspaces."""

    slug = models.SlugField(max_length=64, unique=True)
    name = models.CharField(max_length=255, blank=True)
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    # Embed tokens carry the generation of their workspace as minted; revoking them all
    # ({"all": true}) advances it in one UPDATE (see services.embed).
    embed_generation = models.IntegerField(default=0, editable=False)
    embed_tokens_revoked_at = models.DateTimeField(null=True, blank=True, editable=False)

    class Meta:
        ordering = ["slug"]

    def __str__(self) -> str:
        return self.name or self.slug


class APIKeyQuerySet(models.QuerySet["APIKey"]):
    def usable(self) -> "APIKeyQuerySet":
        now = timezone.now()
        return self.filter(revoked_at__isnull=True).filter(
            models.Q(expires_at__isnull=True) | models.Q(expires_at__gt=now)
        )


class APIKey(models.Model):
    """A credential of a workspace. Only its digest is stored; the prefix names it.

    Issued, looked up and revoked by :mod:`usergroups.services.keys`.
    """

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="api_keys")
    name = models.CharField(max_length=255, blank=True)
    # The prefix names the key (admin, logs, revoke_api_key); the API finds it by digest.
    prefix = ExactCharField(max_length=crypto.KEY_LOOKUP_LENGTH, unique=True, editable=False)
    digest = models.CharField(max_length=64, unique=True, editable=False)
    # Names the key in the embed tokens it mints: random, no part of the key (CONTRACT 8a).
    public_id = ExactCharField(
        max_length=crypto.BINDING_LENGTH, unique=True, editable=False, default=crypto.new_binding
    )
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    expires_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True, editable=False)
    last_used_at = models.DateTimeField(null=True, blank=True, editable=False)
    # One boolean per scope (usergroups.scopes): loaded with the row, so a scope check
    # costs no query, and filterable in the admin like any boolean.
    scope_read = models.BooleanField(
        "read", default=True, help_text="GET of an existing group; the group list."
    )
    scope_write = models.BooleanField(
        "write", default=True, help_text="GET that creates a group; PUT; DELETE."
    )
    scope_rotate = models.BooleanField(
        "rotate", default=True, help_text="POST: rotate a group's token."
    )
    scope_embed = models.BooleanField(
        "embed", default=True, help_text="Mint, introspect and revoke embed tokens."
    )

    objects = APIKeyQuerySet.as_manager()

    class Meta:
        verbose_name = "API key"
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.prefix}… ({self.name})" if self.name else f"{self.prefix}…"

    @property
    def is_revoked(self) -> bool:
        return self.revoked_at is not None

    @property
    def is_expired(self) -> bool:
        return self.expires_at is not None and self.expires_at <= timezone.now()

    @property
    def scopes(self) -> frozenset[str]:
        """The scopes the key holds (usergroups.scopes.SCOPES), read from its row."""
        return frozenset(s for s in SCOPES if getattr(self, field_name(s)))

    def has_scope(self, scope: str) -> bool:
        return bool(getattr(self, field_name(scope)))

    def set_scopes(self, granted: frozenset[str] | set[str]) -> None:
        """Hold exactly ``granted`` (unsaved)."""
        for scope in SCOPES:
            setattr(self, field_name(scope), scope in granted)


class UserGroup(models.Model):
    """A caller's customer. ``team_id`` is the internal id the API reports."""

    team_id = models.BigAutoField(primary_key=True)
    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="user_groups")
    provided_id = ExactCharField(max_length=255)
    name = models.CharField(max_length=255)
    properties = JSONTextField(null=True, blank=True)
    # The group this one inherits properties and mapping from (same workspace; no
    # cycles, at most MAX_HIERARCHY_DEPTH levels): both kept so by services.hierarchy.
    # CASCADE is what the admin's delete confirmation lists; the services delete a
    # subtree themselves, deepest rows detached first (see services.groups).
    parent = models.ForeignKey(
        "self",
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="children",
        verbose_name="parent group",
    )
    token_digest = models.CharField(max_length=64, unique=True, editable=False)
    token_sealed = models.CharField(max_length=64, editable=False)
    # Kept only while ROTATION_GRACE_SECONDS lets an old token resolve.
    previous_token_digest = models.CharField(
        max_length=64, null=True, blank=True, db_index=True, editable=False
    )
    previous_token_valid_until = models.DateTimeField(null=True, blank=True, editable=False)
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    updated_at = models.DateTimeField(auto_now=True)
    token_rotated_at = models.DateTimeField(null=True, blank=True, editable=False)
    # Embed tokens carry the generation they were minted at; verification refuses any
    # other. Revoking them all (rotation, the revoke operation) advances it in one UPDATE:
    # no list of revoked ids, and every process sees it at its next verification.
    embed_generation = models.IntegerField(default=0, editable=False)
    embed_tokens_revoked_at = models.DateTimeField(null=True, blank=True, editable=False)
    # Fixed at creation and carried by embed tokens: a group that later takes this one's
    # team_id (a sequence reset, a restore) never verifies this one's tokens.
    embed_binding = ExactCharField(max_length=32, default=crypto.new_binding, editable=False)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["workspace", "provided_id"], name="usergroups_unique_provided_id"
            )
        ]
        permissions = [("view_token", "Can view user group tokens")]

    def __str__(self) -> str:
        return f"{self.name} ({self.provided_id})"

    def set_token(self, token: str) -> None:
        """Store ``token`` as its digest and its sealed form (nothing usable at rest)."""
        self.token_digest = crypto.digest(token)
        self.token_sealed = crypto.seal_token(token, self.token_digest)
        self.__dict__["token"] = token

    @cached_property
    def token(self) -> str | None:
        """The current token, unsealed with the server secret; None if no secret opens it."""
        return crypto.unseal_token(self.token_sealed, self.token_digest)

    def refresh_from_db(self, *args: Any, **kwargs: Any) -> None:
        # ``token`` is cached from the seal: after a reload (e.g. a rotation elsewhere)
        # it must be unsealed again, not show a token that no longer works.
        self.__dict__.pop("token", None)
        super().refresh_from_db(*args, **kwargs)


class SchemaMapping(models.Model):
    """Which data source a group reads for one schema id."""

    group = models.ForeignKey(UserGroup, on_delete=models.CASCADE, related_name="mappings")
    schema_id = ExactCharField(max_length=255)
    data_source_id = models.CharField(max_length=255)

    class Meta:
        ordering = ["schema_id"]
        constraints = [
            models.UniqueConstraint(fields=["group", "schema_id"], name="usergroups_unique_schema")
        ]

    def __str__(self) -> str:
        return f"{self.schema_id} → {self.data_source_id}"


class EndUser(models.Model):
    """One person of a caller's customer, named by the caller (``end_user_id``).

    Written by :mod:`usergroups.services.end_users`, never here. A person belongs to the
    workspace, not to a group: the same person may be embedded in several groups.
    """

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="end_users")
    end_user_id = ExactCharField(max_length=255)
    display_name = models.CharField(max_length=255)
    attributes = JSONTextField(default=dict, blank=True)
    disabled = models.BooleanField(default=False)
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    updated_at = models.DateTimeField(default=timezone.now, editable=False)
    # When this person's tokens were last revoked (shown in the admin). What refuses
    # them is ``embed_generation``: tokens carry it as minted, and revoking the person's
    # tokens (the API, the admin, an exclusive mint) advances it in one UPDATE.
    tokens_revoked_at = models.DateTimeField(null=True, blank=True, editable=False)
    embed_generation = models.IntegerField(default=0, editable=False)
    # As UserGroup.embed_binding: a person deleted and created again under the same id
    # never verifies the tokens of the one before.
    embed_binding = ExactCharField(max_length=32, default=crypto.new_binding, editable=False)

    class Meta:
        verbose_name = "end user"
        ordering = ["end_user_id"]
        constraints = [
            models.UniqueConstraint(
                fields=["workspace", "end_user_id"], name="usergroups_unique_end_user_id"
            )
        ]

    def __str__(self) -> str:
        if self.display_name and self.display_name != self.end_user_id:
            return f"{self.display_name} ({self.end_user_id})"
        return self.end_user_id


class RevokedEmbedToken(models.Model):
    """One embed token revoked by itself (``{"embed_token": ...}``), named by its ``jti``.

    Kept only until the token expires: revoking one deletes the rows of tokens that
    have expired, and ``manage.py prune_revoked_embed_tokens`` does it for a site that
    revokes rarely. Written by :mod:`usergroups.services.embed`.
    """

    jti = ExactCharField(max_length=64, unique=True, editable=False)
    workspace = models.ForeignKey(
        Workspace, on_delete=models.CASCADE, related_name="revoked_embed_tokens"
    )
    expires_at = models.DateTimeField(db_index=True, editable=False)
    revoked_at = models.DateTimeField(default=timezone.now, editable=False)

    class Meta:
        verbose_name = "revoked embed token"
        ordering = ["-revoked_at"]

    def __str__(self) -> str:
        return self.jti


class AuditEvent(models.Model):
    """One change, mint or revocation, and who made it (CONTRACT section 8).

    Written only by :func:`usergroups.services.audit.record`, in the transaction of the
    change it records; never changed afterwards. Groups and end users are named by the
    caller's ids, as text, not by foreign keys: an event outlives what it names.

    ``id`` (the primary key) is the order of insertion and what the list pages on;
    ``event_id`` is the public id: the time in microseconds (hex) then random hex, so it
    sorts by time and says nothing about how many events other workspaces have.
    """

    id = models.BigAutoField(primary_key=True)
    # Indexed with ``id`` below (the list's order); no index of its own.
    workspace = models.ForeignKey(
        Workspace, on_delete=models.CASCADE, related_name="audit_events", db_index=False
    )
    # Unique by a constraint, not unique=True: on PostgreSQL that would add a second,
    # pattern-ops index that every insert maintains and no query uses.
    event_id = ExactCharField(max_length=40, editable=False)
    at = models.DateTimeField(editable=False)
    action = ExactCharField(max_length=64, editable=False)
    actor_type = ExactCharField(max_length=16, editable=False)
    actor_id = models.CharField(max_length=255, editable=False)
    user_group_id = ExactCharField(max_length=255, null=True, blank=True, editable=False)
    end_user_id = ExactCharField(max_length=255, null=True, blank=True, editable=False)
    request_id = models.CharField(max_length=200, editable=False)
    ip = models.GenericIPAddressField(null=True, blank=True, editable=False)
    details = JSONTextField(default=dict, blank=True, editable=False)

    class Meta:
        verbose_name = "audit event"
        ordering = ["-id"]
        constraints = [
            models.UniqueConstraint(fields=["event_id"], name="usergroups_audit_event_id")
        ]
        indexes = [
            # The list, newest first, and its keyset pages (id < cursor).
            models.Index(fields=["workspace", "id"], name="usergroups_audit_ws_id"),
            # The filters: each an equality on the workspace's events, then id's order.
            models.Index(
                fields=["workspace", "user_group_id", "id"], name="usergroups_audit_ws_group"
            ),
            models.Index(
                fields=["workspace", "end_user_id", "id"], name="usergroups_audit_ws_end_user"
            ),
            # A dotted prefix is turned into the actions it names (action IN (...)).
            models.Index(fields=["workspace", "action", "id"], name="usergroups_audit_ws_action"),
            # A time window, newest first (keyset on at then id); export's --since and
            # prune's age.
            models.Index(fields=["workspace", "at", "id"], name="usergroups_audit_ws_at"),
        ]

    def __str__(self) -> str:
        return f"{self.action} by {self.actor_type}:{self.actor_id} at {self.at:%Y-%m-%d %H:%M:%S}"

    @property
    def actor(self) -> dict[str, str]:
        return {"type": self.actor_type, "id": self.actor_id}


class Webhook(models.Model):
    """An endpoint of a workspace that receives its audit events (CONTRACT section 8).

    Written only by :mod:`usergroups.webhooks`. The signing secret is kept as
    its digest and sealed, like a group token: a copy of the database opens nothing.
    """

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="webhooks")
    webhook_id = ExactCharField(max_length=40, unique=True, editable=False)
    url = models.CharField(max_length=2000)
    # The action prefixes it receives ("user_group", "embed_token.minted").
    events = JSONTextField(default=list)
    description = models.CharField(max_length=255, blank=True, default="")
    disabled = models.BooleanField(default=False)
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    secret_digest = models.CharField(max_length=64, editable=False)
    secret_sealed = models.CharField(max_length=64, editable=False)
    # Deliveries that ended "failed" in a row; a delivered one resets it.
    consecutive_failures = models.PositiveIntegerField(default=0, editable=False)
    # Its latest attempt got no 2xx answer: its deliveries run after other webhooks'.
    failing = models.BooleanField(default=False, editable=False)
    # Held by the one attempt in flight to it, until then (a lease, like a delivery's).
    sending_until = models.DateTimeField(null=True, blank=True, editable=False)

    class Meta:
        ordering = ["created_at", "id"]
        indexes = [models.Index(fields=["workspace", "disabled"], name="usergroups_webhook_ws")]

    def __str__(self) -> str:
        return f"{self.webhook_id} {self.url}"

    def set_secret(self, secret: str) -> None:
        """Store ``secret`` as its digest and its sealed form (nothing usable at rest)."""
        self.secret_digest = crypto.digest(secret)
        self.secret_sealed = crypto.seal_webhook_secret(secret, self.secret_digest)

    def secret(self) -> str | None:
        """The signing secret, unsealed; None if no configured secret opens it."""
        return crypto.unseal_webhook_secret(self.secret_sealed, self.secret_digest)


class WebhookDelivery(models.Model):
    """The outbox: one event to send to one webhook, written in the event's transaction.

    ``delivery_id`` is the ``webhook-id`` header, the same on every attempt, so a
    receiver can drop a duplicate. ``next_attempt_at`` is when it is due; a worker
    claims it by moving that forward (a lease), so a worker killed mid-send leaves it
    due again once the lease is over, for the sweeper to enqueue.
    """

    PENDING = "pending"
    DELIVERED = "delivered"
    FAILED = "failed"
    STATUSES = [(PENDING, "pending"), (DELIVERED, "delivered"), (FAILED, "failed")]

    id = models.BigAutoField(primary_key=True)
    delivery_id = ExactCharField(max_length=40, unique=True, editable=False)
    webhook = models.ForeignKey(Webhook, on_delete=models.CASCADE, related_name="deliveries")
    event = models.ForeignKey(AuditEvent, on_delete=models.CASCADE, related_name="deliveries")
    status = models.CharField(max_length=16, choices=STATUSES, default=PENDING)
    attempts = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    next_attempt_at = models.DateTimeField()
    last_attempt_at = models.DateTimeField(null=True, blank=True)
    last_status_code = models.PositiveSmallIntegerField(null=True, blank=True)
    # What the last attempt got: a short excerpt of the answer, or why it failed.
    last_response = models.CharField(max_length=200, blank=True, default="")

    class Meta:
        verbose_name_plural = "webhook deliveries"
        ordering = ["-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["event", "webhook"], name="usergroups_delivery_event_webhook"
            )
        ]
        indexes = [
            # The sweeper: pending deliveries that are due.
            models.Index(fields=["status", "next_attempt_at"], name="usergroups_delivery_due"),
        ]

    def __str__(self) -> str:
        return f"{self.delivery_id} ({self.status})"
