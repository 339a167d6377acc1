"""``/api/user/webhook``: register (POST), list (GET ``/list``) and delete (DELETE) the
workspace's webhooks (CONTRACT section 8). Writes go through
:mod:`usergroups.webhooks.registry`."""

from django.utils.translation import gettext_lazy as _
from django.views.decorators.debug import sensitive_variables
from rest_framework.exceptions import NotFound
from rest_framework.request import Request
from rest_framework.response import Response

from usergroups import scopes
from usergroups.api.views import Operation, WorkspaceAPIView, workspace_id
from usergroups.api.webhook_serializers import (
    CreateWebhookAnswer,
    CreateWebhookSerializer,
    NewWebhookSerializer,
    WebhookAnswer,
    WebhookIdSerializer,
    WebhookListAnswer,
    WebhookSerializer,
)
from usergroups.webhooks import registry


class WebhookView(WorkspaceAPIView):
    """POST registers a webhook (its secret shown once); DELETE deletes one."""

    http_method_names = ["post", "delete"]
    required_scopes = {"POST": scopes.WRITE, "DELETE": scopes.WRITE}
    operations = {
        "POST": Operation(
            "create_webhook",
            "Register a webhook",
            CreateWebhookAnswer,
            request=CreateWebhookSerializer,
        ),
        "DELETE": Operation(
            "delete_webhook",
            "Delete a webhook",
            WebhookAnswer,
            request=WebhookIdSerializer,
            failures={404: "`not_found`: no webhook of this workspace has this id."},
        ),
    }

    @sensitive_variables("secret")
    def post(self, request: Request) -> Response:
        """Every audit event of the workspace whose action one of `events` names is POSTed to
        `url` as `{"type": action, "timestamp": at, "data": event}`, signed as Standard Webhooks
        specifies, at least once. The signing secret is in this answer only."""
        serializer = CreateWebhookSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        webhook, secret = registry.create_webhook(
            workspace_id(request), data["url"], data["events"], data["description"]
        )
        shown = NewWebhookSerializer(webhook, context={"secret": secret}).data
        return Response({"success": 1, "webhook": shown})

    def delete(self, request: Request) -> Response:
        """Deletes the webhook and its pending deliveries."""
        serializer = WebhookIdSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        deleted = registry.delete_webhook(
            workspace_id(request), serializer.validated_data["webhook_id"]
        )
        if deleted is None:
            raise NotFound(_("No webhook of this workspace has this id."))
        return Response({"success": 1, "webhook": WebhookSerializer(deleted).data})


class WebhookListView(WorkspaceAPIView):
    """GET /api/user/webhook/list: the workspace's webhooks, oldest first, no secret."""

    http_method_names = ["get"]
    required_scopes = {"GET": scopes.READ}
    operations = {"GET": Operation("list_webhooks", "List webhooks", WebhookListAnswer)}

    def get(self, request: Request) -> Response:
        """The workspace's webhooks, oldest first, never with their secrets."""
        listed = registry.list_webhooks(workspace_id(request))
        return Response({"success": 1, "webhooks": WebhookSerializer(listed, many=True).data})
