"""Webhooks and their deliveries: registered here or by the API, the secret shown once
(on the page the add redirects to; until then sealed in the session, as
:class:`~usergroups.admin.common.SecretShownOnce` has it), deliveries read-only with a
"redeliver" action. Every write goes through :mod:`usergroups.webhooks`."""

from typing import TYPE_CHECKING, Any

from django import forms
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.forms import Media
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.urls import URLPattern
from django.utils.translation import gettext, ngettext
from django.utils.translation import gettext_lazy as _

from usergroups.admin.common import (
    MEDIA,
    ActsAsStaff,
    OfferedLookupsOnly,
    SecretShownOnce,
    secret_html,
    secret_page_context,
    when,
)
from usergroups.api.webhook_serializers import CreateWebhookSerializer
from usergroups.models import Webhook, WebhookDelivery
from usergroups.webhooks import deliveries, registry

if TYPE_CHECKING:
    WebhookAdminBase = admin.ModelAdmin[Webhook]
    DeliveryAdminBase = admin.ModelAdmin[WebhookDelivery]
else:
    WebhookAdminBase = DeliveryAdminBase = admin.ModelAdmin


def flat(problems: Any) -> list[str]:
    """A serializer's messages for one field (a list's are by item) as one list."""
    if isinstance(problems, dict):
        return [message for item in problems.values() for message in flat(item)]
    if isinstance(problems, list):
        return [message for item in problems for message in flat(item)]
    return [str(problems)]


class WebhookAddForm(forms.ModelForm):
    """Held to the API's rules: the API's serializer validates the fields."""

    events_text = forms.CharField(
        label=_("Events"),
        help_text=_(
            "Action prefixes, comma-separated: an action (embed_token.minted) or a family "
            "of them (user_group)."
        ),
    )

    class Meta:
        model = Webhook
        fields = ["workspace", "url", "description"]

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        events = [part.strip() for part in cleaned.get("events_text", "").split(",")]
        serializer = CreateWebhookSerializer(
            data={
                "url": cleaned.get("url", ""),
                "events": [event for event in events if event],
                "description": cleaned.get("description", ""),
            }
        )
        if not serializer.is_valid():
            for name, problems in serializer.errors.items():
                self.add_error("events_text" if name == "events" else name, flat(problems))
        else:
            cleaned.update(serializer.validated_data)
        return cleaned


class WebhookChangeForm(forms.ModelForm):
    class Meta:
        model = Webhook
        fields = ["description", "disabled"]


@admin.register(Webhook)
class WebhookAdmin(ActsAsStaff, OfferedLookupsOnly, SecretShownOnce, WebhookAdminBase):
    list_display = ["webhook_id", "url", "workspace", "event_list", "disabled", "created"]
    list_filter = ["disabled", "workspace"]
    list_select_related = ["workspace"]
    search_fields = ["webhook_id", "url", "description"]
    ordering = ["-created_at", "-id"]

    @property
    def media(self) -> Media:
        return super().media + MEDIA

    def get_form(
        self, request: HttpRequest, obj: Webhook | None = None, change: bool = False, **kwargs: Any
    ) -> Any:
        kwargs["form"] = WebhookChangeForm if obj is not None else WebhookAddForm
        kwargs["fields"] = None
        return super().get_form(request, obj, change=change, **kwargs)

    def get_fields(self, request: HttpRequest, obj: Webhook | None = None) -> Any:
        if obj is None:
            return ["workspace", "url", "events_text", "description"]
        return [
            "webhook_id",
            "workspace",
            "url",
            "event_list",
            "description",
            "disabled",
            "consecutive_failures",
            "created",
        ]

    def get_readonly_fields(self, request: HttpRequest, obj: Webhook | None = None) -> list[str]:
        if obj is None:
            return []
        return ["webhook_id", "workspace", "url", "event_list", "consecutive_failures", "created"]

    @admin.display(description=_("events"))
    def event_list(self, obj: Webhook) -> str:
        return ", ".join(obj.events)

    @admin.display(description=_("created"), ordering="created_at")
    def created(self, obj: Webhook) -> str:
        return when(obj.created_at)

    def save_model(self, request: HttpRequest, obj: Webhook, form: Any, change: Any) -> None:
        data = form.cleaned_data
        if change:
            registry.change_webhook(
                obj.pk, description=data["description"], disabled=data["disabled"]
            )
            obj.refresh_from_db()
            return
        created, secret = registry.create_webhook(
            data["workspace"].pk, data["url"], data["events"], data["description"]
        )
        obj.pk, obj.webhook_id = created.pk, created.webhook_id
        self.keep_secret(obj, secret)

    def delete_model(self, request: HttpRequest, obj: Webhook) -> None:
        registry.delete_webhook(obj.workspace_id, obj.webhook_id)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> None:
        for webhook in queryset:
            registry.delete_webhook(webhook.workspace_id, webhook.webhook_id)

    def secret_page(self, request: HttpRequest, obj: Webhook, secret: str) -> HttpResponse:
        context = secret_page_context(
            self,
            request,
            gettext("Copy the webhook's signing secret"),
            webhook=obj,
            secret=secret_html(
                secret, element_id="new-webhook-secret", label=gettext("Secret"), revealed=True
            ),
        )
        return TemplateResponse(request, "usergroups/admin/webhook/created.html", context)


@admin.register(WebhookDelivery)
class WebhookDeliveryAdmin(ActsAsStaff, OfferedLookupsOnly, DeliveryAdminBase):
    """The outbox, read-only: what was sent where, how it went; failed ones redelivered."""

    list_display = [
        "delivery_id",
        "webhook",
        "action",
        "status",
        "attempts",
        "last_status_code",
        "next_attempt_at",
        "last_attempt_at",
    ]
    list_filter = ["status", "webhook__workspace"]
    list_select_related = ["webhook", "event"]
    search_fields = ["delivery_id", "webhook__webhook_id"]
    actions = ["redeliver"]
    readonly_fields = fields = (
        "delivery_id",
        "webhook",
        "action",
        "status",
        "attempts",
        "created_at",
        "next_attempt_at",
        "last_attempt_at",
        "last_status_code",
        "last_response",
    )

    @admin.display(description=_("action"))
    def action(self, obj: WebhookDelivery) -> str:
        return obj.event.action

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def get_urls(self) -> list[URLPattern]:
        # No add page at all (rows come from events), rather than one that answers 403.
        return [url for url in super().get_urls() if not (url.name or "").endswith("_add")]

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    @admin.action(description=_("Redeliver the selected deliveries"))
    def redeliver(self, request: HttpRequest, queryset: QuerySet[Any]) -> None:
        count = deliveries.redeliver(queryset.values_list("pk", flat=True))
        self.message_user(
            request,
            ngettext(
                "%(count)s delivery will be sent again, with the same webhook-id.",
                "%(count)s deliveries will be sent again, with the same webhook-id.",
                count,
            )
            % {"count": count},
            messages.SUCCESS,
        )
