"""``GET /api/user/audit``: the workspace's audit trail, newest first (CONTRACT section 8)."""

from rest_framework.request import Request
from rest_framework.response import Response

from usergroups import scopes
from usergroups.api.audit_serializers import (
    AuditAnswer,
    AuditEventSerializer,
    AuditQuerySerializer,
    encode_cursor,
)
from usergroups.api.querystring import query_params
from usergroups.api.views import Operation, WorkspaceAPIView, workspace_id
from usergroups.services import audit


class AuditEventListView(WorkspaceAPIView):
    """A page of the workspace's events matching the filters, and where the next starts."""

    http_method_names = ["get"]
    required_scopes = {"GET": scopes.READ}
    operations = {
        "GET": Operation(
            "list_audit_events", "List audit events", AuditAnswer, query=AuditQuerySerializer
        )
    }

    def get(self, request: Request) -> Response:
        """The workspace's audit trail, newest first: every change, mint and revocation, who made
        it (`actor`), the request's `X-Request-ID`, what changed (`details`). Filters combine;
        `since` is inclusive, `until` exclusive. Pages follow `next_cursor` (send the same filters
        with it): none is skipped or repeated."""
        workspace = workspace_id(request)
        query = AuditQuerySerializer(
            data=query_params(request), context={"workspace_id": workspace}
        )
        query.is_valid(raise_exception=True)
        data = query.validated_data
        events = audit.events_of(
            workspace,
            action_prefix=data.get("action"),
            user_group_id=data.get("user_group_id"),
            end_user_id=data.get("end_user_id"),
            since=data.get("since"),
            until=data.get("until"),
        )
        page, next_position = audit.page_of_events(
            events,
            by_time=AuditQuerySerializer.by_time(data),
            after=data.get("cursor"),
            limit=data["limit"],
        )
        return Response(
            {
                "success": 1,
                "events": AuditEventSerializer(page, many=True).data,
                "next_cursor": None
                if next_position is None
                else encode_cursor(next_position, workspace),
            }
        )
