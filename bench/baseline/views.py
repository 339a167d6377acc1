"""The baselines a Django user would compare ``/api/user`` with.

(0) ``bare``: a plain Django view answering the same constant body with ``JsonResponse``:
no DRF, no authentication, no query. The floor of this server (gunicorn, Django's handler
and the example project's middleware); everything above it is the cost of an API.

(1) ``ConstantView``: a DRF ``APIView`` behind DRF's ``TokenAuthentication`` answering a
constant body of the size of a get-or-create answer: the floor of "DRF plus one
authenticated query" on this server.

(1-) ``NoAuthenticationView``: a DRF ``APIView`` with no authentication at all, answering
a group's variables as the embed verification endpoint does (bench/site/views.py): the
ceiling any DRF authentication class can reach on this server, so a verification target
against baseline (1) can be read against what no verification at all would give.

(2) ``ObviousGroupView``: the same service written the obvious way with DRF built-ins:
``ModelSerializer`` with nested mappings, ``get_or_create``, ``prefetch_related``,
``TokenAuthentication``, tokens stored plain.
"""

import secrets

from django.http import JsonResponse
from rest_framework import serializers
from rest_framework.authentication import TokenAuthentication
from rest_framework.exceptions import NotFound
from rest_framework.permissions import AllowAny, IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from bench.baseline.models import Group, Mapping
from bench.workload import CONSTANT_RESPONSE, TARGET_PROPERTIES


def new_token() -> str:
    return secrets.token_urlsafe(32)


def bare(request):
    """Baseline (0): the constant body, as plain Django serves it."""
    return JsonResponse(CONSTANT_RESPONSE)


class ConstantView(APIView):
    authentication_classes = [TokenAuthentication]
    permission_classes = [IsAuthenticated]

    def get(self, request):
        return Response(CONSTANT_RESPONSE)


class NoAuthenticationView(APIView):
    authentication_classes: list = []
    permission_classes = [AllowAny]

    def get(self, request):
        return Response({"success": 1, "variables": TARGET_PROPERTIES})


class MappingSerializer(serializers.ModelSerializer):
    class Meta:
        model = Mapping
        fields = ["schema_id", "data_source_id"]


class GroupSerializer(serializers.ModelSerializer):
    team_id = serializers.IntegerField(source="id", read_only=True)
    mapping = MappingSerializer(source="mappings", many=True, read_only=True)

    class Meta:
        model = Group
        fields = ["team_id", "token", "name", "provided_id", "properties", "mapping"]

    def to_representation(self, instance):
        data = super().to_representation(instance)
        data["mapping"] = {m["schema_id"]: m["data_source_id"] for m in data["mapping"]}
        return data


class RotatedGroupSerializer(serializers.ModelSerializer):
    team_id = serializers.IntegerField(source="id", read_only=True)

    class Meta:
        model = Group
        fields = ["team_id", "token", "name", "provided_id"]


class GetOrCreateSerializer(serializers.Serializer):
    user_group_id = serializers.CharField(max_length=255)
    name = serializers.CharField(max_length=255, required=False, allow_blank=True)
    mapping = serializers.DictField(child=serializers.CharField(max_length=255), required=False)
    properties = serializers.JSONField(required=False, allow_null=True)


class RotateSerializer(serializers.Serializer):
    current_token = serializers.CharField()


class ObviousGroupView(APIView):
    authentication_classes = [TokenAuthentication]
    permission_classes = [IsAuthenticated]

    def get(self, request):
        serializer = GetOrCreateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        group, created = Group.objects.prefetch_related("mappings").get_or_create(
            owner=request.user,
            provided_id=data["user_group_id"],
            defaults={
                "name": data.get("name") or data["user_group_id"],
                "properties": data.get("properties"),
                "token": new_token(),
            },
        )
        if created:
            Mapping.objects.bulk_create(
                Mapping(group=group, schema_id=schema_id, data_source_id=source)
                for schema_id, source in data.get("mapping", {}).items()
            )
        return Response(
            {"success": 1, "new_user_group": created, "user_group": GroupSerializer(group).data}
        )

    def post(self, request):
        serializer = RotateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        try:
            group = Group.objects.get(
                owner=request.user, token=serializer.validated_data["current_token"]
            )
        except Group.DoesNotExist:
            raise NotFound()
        group.token = new_token()
        group.save()
        return Response({"success": 1, "user_group": RotatedGroupSerializer(group).data})
