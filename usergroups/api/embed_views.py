"""``/api/user/embed-token``: mint, introspect and revoke embed tokens (scope ``embed``),
and the JWK Set that verifies them (no authentication)."""

from typing import Any

from django.utils.translation import gettext_lazy as _
from django.views.decorators.debug import sensitive_variables
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response

from usergroups import scopes
from usergroups.api.embed_serializers import (
    EmbedTokenRequestSerializer,
    MintRequestSerializer,
    RevokeRequestSerializer,
    active_answer,
    minted_answer,
)
from usergroups.api.serializers import NamedGroupSerializer
from usergroups.api.views import WorkspaceAPIView, workspace_id
from usergroups.embed import keys, tokens
from usergroups.services import embed

#: How long a cache may keep the JWK Set. A new key (a secret rotation) shows within
#: this time; tokens it signs are unknown to a verifier that cached the old set until then.
JWKS_MAX_AGE = 300
_NO_GROUP = _("No user group of this workspace has this id.")


class EmbedScopeView(WorkspaceAPIView):
    """A POST-only endpoint of the workspace's API that needs the ``embed`` scope."""

    http_method_names = ["post"]
    required_scopes = {"POST": scopes.EMBED}


class EmbedTokenView(EmbedScopeView):
    """POST: a new embed token for one of the workspace's groups."""

    @sensitive_variables("minted")
    def post(self, request: Request) -> Response:
        serializer = MintRequestSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        try:
            minted = embed.mint_embed_token(
                workspace_id(request),
                data["user_group_id"],
                expires_in=data.get("expires_in"),
                resource=data.get("resource"),
                origin=data.get("origin"),
                params=data.get("params"),
            )
        except tokens.TokenTooLarge:
            message = _("The embed token would be over %(limit)s bytes; send less.") % {
                "limit": tokens.MAX_TOKEN_BYTES
            }
            given = [name for name in ("params", "resource", "origin") if name in data]
            raise ValidationError({name: [message] for name in given}) from None
        if minted is None:
            raise NotFound(_NO_GROUP)
        return Response(minted_answer(minted))


class EmbedTokenIntrospectView(EmbedScopeView):
    """POST: whether an embed token is active for this workspace, and what it grants."""

    def post(self, request: Request) -> Response:
        serializer = EmbedTokenRequestSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        grant = embed.introspect(workspace_id(request), serializer.validated_data["embed_token"])
        if grant is None:
            return Response({"success": 1, "active": False})
        return Response(active_answer(grant))


class EmbedTokenRevokeView(EmbedScopeView):
    """POST: revoke every embed token minted so far for a group."""

    def post(self, request: Request) -> Response:
        serializer = RevokeRequestSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        group = embed.revoke_embed_tokens_of(
            workspace_id(request), serializer.validated_data["user_group_id"]
        )
        if group is None:
            raise NotFound(_NO_GROUP)
        return Response({"success": 1, "user_group": NamedGroupSerializer(group).data})


class JWKSView(WorkspaceAPIView):
    """GET: the JWK Set (RFC 7517) of the keys that verify current embed tokens, for any
    JOSE library or service (e.g. Cube) to check tokens without calling back."""

    http_method_names = ["get"]
    authentication_classes: list[Any] = []
    permission_classes = [AllowAny]

    def get(self, request: Request) -> Response:
        response = Response(keys.jwk_set())
        response["Cache-Control"] = f"public, max-age={JWKS_MAX_AGE}"
        return response
