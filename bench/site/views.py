"""The views the benchmark loads besides the app's own (``/api/user``, its embed-token
mint): a host's dashboard endpoint behind the app's embed tokens, and the baselines a
Django developer would pick instead, each as its library documents it.

Every verification view answers the same body, the target group's variables
(bench/workload.py): what the app's host view reads from ``request.auth`` the baselines
answer as they are, so each row differs by its authentication alone, and whatever a
baseline would do to find the variables would only add to its cost.
"""

from datetime import UTC, datetime

from knox.auth import TokenAuthentication as KnoxTokenAuthentication
from rest_framework import serializers
from rest_framework.authentication import TokenAuthentication
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView
from rest_framework_simplejwt.authentication import JWTStatelessUserAuthentication
from rest_framework_simplejwt.tokens import AccessToken

from bench.workload import CONSTANT_RESPONSE, VARIABLES
from usergroups.auth.embed import EmbedTokenAuthentication
from usergroups.auth.permissions import HasEmbedToken


class EmbedVariablesView(APIView):
    """A host's dashboard endpoint: the variables the app's embed token grants."""

    authentication_classes = [EmbedTokenAuthentication]
    permission_classes = [HasEmbedToken]

    def get(self, request):
        return Response({"success": 1, "variables": request.auth.variables})


class AuthtokenConstantView(APIView):
    """DRF's ``TokenAuthentication`` (one query) and a constant body of the size and
    shape of a get of an existing group: the floor of an authenticated DRF read."""

    authentication_classes = [TokenAuthentication]
    permission_classes = [IsAuthenticated]

    def get(self, request):
        return Response(CONSTANT_RESPONSE)


class KnoxVariablesView(APIView):
    """django-rest-knox: hashed, expiring, revocable tokens looked up in the database."""

    authentication_classes = [KnoxTokenAuthentication]
    permission_classes = [IsAuthenticated]

    def get(self, request):
        return Response({"success": 1, "variables": VARIABLES})


class SimpleJWTVariablesView(APIView):
    """djangorestframework-simplejwt, stateless: the signature and claims only, no query
    and so no revocation."""

    authentication_classes = [JWTStatelessUserAuthentication]
    permission_classes = [IsAuthenticated]

    def get(self, request):
        return Response({"success": 1, "variables": VARIABLES})


class MintSerializer(serializers.Serializer):
    user_group_id = serializers.CharField(max_length=255)


class SimpleJWTMintView(APIView):
    """A hand-written mint: DRF's ``TokenAuthentication``, a serializer, and a simplejwt
    ``AccessToken`` with the claims of the app's embed token (``sub``, ``user_group_id``,
    ``gen``, ``iat``, ``exp``, ``jti``, ``aud``, ``iss``), signed with EdDSA."""

    authentication_classes = [TokenAuthentication]
    permission_classes = [IsAuthenticated]

    def post(self, request):
        serializer = MintSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        user_group_id = serializer.validated_data["user_group_id"]
        token = AccessToken.for_user(request.user)
        token["user_group_id"] = user_group_id
        token["gen"] = 0
        return Response(
            {
                "success": 1,
                "embed_token": str(token),
                "expires_in": int(token.lifetime.total_seconds()),
                "expires_at": datetime.fromtimestamp(token["exp"], UTC).strftime(
                    "%Y-%m-%dT%H:%M:%SZ"
                ),
                "user_group": {"team_id": request.user.pk, "provided_id": user_group_id},
            }
        )
