"""Workspaces own API keys and user groups; user groups own schema mappings.

Rows are written by :mod:`usergroups.services` (keys and groups), never here.
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
