"""Baseline (2): the user group service as a Django user would first write it.

Tokens are stored in plain text (as DRF's own ``authtoken`` does), a group belongs to
the ``User`` behind a DRF token.
"""

from django.conf import settings
from django.db import models


class Group(models.Model):
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    provided_id = models.CharField(max_length=255)
    name = models.CharField(max_length=255)
    properties = models.JSONField(null=True, blank=True)
    token = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["owner", "provided_id"], name="bench_obvious_unique")
        ]


class Mapping(models.Model):
    group = models.ForeignKey(Group, on_delete=models.CASCADE, related_name="mappings")
    schema_id = models.CharField(max_length=255)
    data_source_id = models.CharField(max_length=255)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["group", "schema_id"], name="bench_obvious_schema")
        ]
