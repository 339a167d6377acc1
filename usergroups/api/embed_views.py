"""``/api/user/embed-token``: mint, introspect and revoke embed tokens (scope ``embed``),
and the JWK Set that verifies them (no authentication)."""

from typing import Any

from django.utils.translation import gettext_lazy as _
from django.views.decorators.debug import sensitive_variables
from rest_framework.exceptions import NotFound, PermissionDenied, ValidationError
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response

from usergroups import scopes
from usergroups.api.embed_serializers import (
    EmbedTokenRequestSerializer,
    IntrospectAnswer,
    JWKSet,
    MintAnswer,
    MintRequestSerializer,
    RevokeAnswer,
    RevokeRequestSerializer,
    active_answer,
    minted_answer,
)
from usergroups.api.end_user_views import NOT_FOUND as NO_END_USER
from usergroups.api.serializers import NamedGroupSerializer
from usergroups.api.views import Operation, WorkspaceAPIView, request_key, workspace_id
from usergroups.embed import keys, tokens
from usergroups.services import embed, end_users

#: How long a cache may keep the JWK Set. A new key (a secret rotation) shows within
#: this time; tokens it signs are unknown to a verifier that cached the old set until then.
JWKS_MAX_AGE = 300
_NO_GROUP = _("No user group of this workspace has this id.")


class EndUserDisabled(PermissionDenied):
    default_detail = _("This end user is disabled: no embed token is minted for them.")
    default_code = "end_user_disabled"


class AttributesLocked(PermissionDenied):
    default_detail = _(
        "These attributes differ from the end user's stored ones; this API key lacks the "
        "'write' scope, which changing them needs."
    )


class EmbedScopeView(WorkspaceAPIView):
    """A POST-only endpoint of the workspace's API that needs the ``embed`` scope."""

    http_method_names = ["post"]
    required_scopes = {"POST": scopes.EMBED}


class EmbedTokenView(EmbedScopeView):
    """POST: a new embed token for one of the workspace's groups."""

    operations = {
        "POST": Operation(
            "mint_embed_token",
            "Mint an embed token",
            MintAnswer,
            request=MintRequestSerializer,
            failures={
                403: "`end_user_disabled`: the person is disabled. Also `permission_denied`: a "
                "key without `write` sent `end_user.attributes` that differ from the person's.",
                404: "`not_found`: no group of this workspace has this id.",
            },
        )
    }

    @sensitive_variables("minted")
    def post(self, request: Request) -> Response:
        """A short-lived JWT (compact JWS, EdDSA or ES256) for the browser, instead of the group
        token; one that would be larger than its limit is 400 naming what made it so. `end_user`
        names the person: created if missing. A key without `write` grants no more than the
        lineage and the writers with `write` allowed: its `end_user.attributes` must be the
        person's stored ones (403 `permission_denied`, nothing written). Writes its audit event
        (`embed_token.minted`, naming the token by its `jti`)."""
        serializer = MintRequestSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data, api_key = serializer.validated_data, request_key(request)
        try:
            minted = embed.mint_embed_token(
                api_key.workspace_id,
                data["user_group_id"],
                key_id=api_key.public_id,
                may_replace_variables=api_key.has_scope(scopes.WRITE),
                end_user=serializer.end_user_spec(),
                exclusive=data["exclusive"],
                expires_in=data.get("expires_in"),
                resource=data.get("resource"),
                origin=data.get("origin"),
                params=data.get("params"),
            )
        except embed.VariablesLocked as exc:
            raise ValidationError(
                {
                    name: [
                        _(
                            "Sets %(keys)s, which the user group's lineage or the end user "
                            "sets; only a key with the write scope may replace them."
                        )
                        % {"keys": ", ".join(keys)}
                    ]
                    for name, keys in exc.clashes.items()
                }
            ) from None
        except embed.AttributesLocked:
            raise AttributesLocked() from None
        except end_users.EndUserDisabled:
            raise EndUserDisabled() from None
        except tokens.TokenTooLarge:
            message = _("The embed token would be over %(limit)s bytes; send less.") % {
                "limit": tokens.MAX_TOKEN_BYTES
            }
            given = [name for name in ("params", "resource", "origin", "end_user") if name in data]
            raise ValidationError({name: [message] for name in given}) from None
        if minted is None:
            raise NotFound(_NO_GROUP)
        return Response(minted_answer(minted))


class EmbedTokenIntrospectView(EmbedScopeView):
    """POST: whether an embed token is active for this workspace, and what it grants."""

    operations = {
        "POST": Operation(
            "introspect_embed_token",
            "Introspect an embed token",
            IntrospectAnswer,
            request=EmbedTokenRequestSerializer,
        )
    }

    def post(self, request: Request) -> Response:
        """Whether the token is active for this workspace, and what it grants. An expired, forged,
        malformed, revoked or another workspace's token, or one whose group is deleted, is
        `{"success": 1, "active": false}` and nothing more."""
        serializer = EmbedTokenRequestSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        grant = embed.introspect(workspace_id(request), serializer.validated_data["embed_token"])
        if grant is None:
            return Response({"success": 1, "active": False})
        return Response(active_answer(grant))


class EmbedTokenRevokeView(EmbedScopeView):
    """POST: revoke embed tokens on one axis: a group (and its subtree), an end user in
    every group, one token, or the whole workspace."""

    operations = {
        "POST": Operation(
            "revoke_embed_tokens",
            "Revoke embed tokens",
            RevokeAnswer,
            request=RevokeRequestSerializer,
            failures={
                404: "`not_found`: no such group (or end user) here, or `embed_token` is not "
                "a live embed token of this workspace (forged, expired, revoked or another's)."
            },
        )
    }

    def post(self, request: Request) -> Response:
        """Every embed token on the axis minted so far stops working at once, on every process;
        the group token stays. Tokens minted afterwards work."""
        serializer = RevokeRequestSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data, axis, workspace = serializer.validated_data, serializer.axis, workspace_id(request)
        answer: dict[str, Any] = {"success": 1, "revoked": axis}
        if axis == "user_group":
            group = embed.revoke_embed_tokens_of(
                workspace, data["user_group_id"], subtree=data.get("subtree", False)
            )
            if group is None:
                raise NotFound(_NO_GROUP)
            answer["user_group"] = NamedGroupSerializer(group).data
        elif axis == "end_user":
            if end_users.revoke_tokens(workspace, data["end_user_id"]) is None:
                raise NotFound(NO_END_USER)
        elif axis == "embed_token":
            if embed.revoke_embed_token(workspace, data["embed_token"]) is None:
                raise NotFound(_("No live embed token of this workspace is this one."))
        else:
            embed.revoke_workspace_embed_tokens(workspace)
        return Response(answer)


class JWKSView(WorkspaceAPIView):
    """GET: the JWK Set (RFC 7517) of the keys that verify current embed tokens, for any
    JOSE library or service (e.g. Cube) to check tokens without calling back."""

    http_method_names = ["get"]
    authentication_classes: list[Any] = []
    permission_classes = [AllowAny]
    failures = {}  # no key, no input
    operations = {
        "GET": Operation(
            "embed_token_jwks",
            "The JWK Set of embed tokens",
            JWKSet,
            failures={405: "`method_not_allowed`."},
        )
    }

    def get(self, request: Request) -> Response:
        """The public keys (RFC 7517) that verify current embed tokens, for any JOSE library.
        Cacheable for 5 minutes. No API key needed."""
        response = Response(keys.jwk_set())
        response["Cache-Control"] = f"public, max-age={JWKS_MAX_AGE}"
        return response
