"""Two "data sources" of sample sales rows: one table each, as two warehouses would be.

A group's mapping names its data source for the schema id ``sales``
(``{"sales": "eu_warehouse"}``); :mod:`.sources` turns that name into one of these tables.
"""

from django.db import models


class SalesRow(models.Model):
    region = models.CharField(max_length=32)
    product = models.CharField(max_length=64)
    month = models.CharField(max_length=7, help_text="YYYY-MM")
    amount = models.IntegerField()

    class Meta:
        abstract = True

    def __str__(self) -> str:
        return f"{self.region} {self.product} {self.month}: {self.amount}"


class EuWarehouseSale(SalesRow):
    class Meta:
        db_table = "dashboards_sales_eu_warehouse"
        indexes = [models.Index(fields=["region", "month"], name="dash_eu_region_month")]


class UsWarehouseSale(SalesRow):
    class Meta:
        db_table = "dashboards_sales_us_warehouse"
        indexes = [models.Index(fields=["region", "month"], name="dash_us_region_month")]


class ReceivedWebhookEvent(models.Model):
    """An event the customer site's webhook receiver took (``/demo/webhook/``), kept
    for its activity panel: one row per ``webhook-id``, so a redelivery is not shown twice."""

    message_id = models.CharField(max_length=64, unique=True)
    event_type = models.CharField(max_length=64)
    received_at = models.DateTimeField(auto_now_add=True)
    payload = models.JSONField()

    class Meta:
        ordering = ["-id"]

    def __str__(self) -> str:
        return f"{self.event_type} ({self.message_id})"


class SignOut(models.Model):
    """The customer site's own record of a person's last "sign out everywhere": a
    sign-in from before it no longer counts, in any browser (the site's half of the
    sign-out; the host's half is the revocation of the person's embed tokens)."""

    end_user_id = models.CharField(max_length=255, unique=True)
    signed_out_at = models.DateTimeField()

    def __str__(self) -> str:
        return f"{self.end_user_id} signed out everywhere at {self.signed_out_at}"
