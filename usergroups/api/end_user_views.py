"""``/api/user/end-user``: one person of a caller's customer (CONTRACT section 7).

PUT creates or changes, GET reads, DELETE deletes; ``/api/user/end-user/list`` pages
through the workspace's end users. Writes go through :mod:`usergroups.services.end_users`.
"""

from typing import Any

from django.utils.translation import gettext_lazy as _
from rest_framework.exceptions import NotFound
from rest_framework.request import Request
from rest_framework.response import Response

from usergroups import scopes
from usergroups.api.end_user_serializers import (
    DeleteEndUserAnswer,
    EndUserAnswer,
    EndUserIdSerializer,
    EndUserListAnswer,
    EndUserListQuerySerializer,
    EndUserSerializer,
    PutEndUserAnswer,
    PutEndUserSerializer,
)
from usergroups.api.querystring import query_params
from usergroups.api.views import Operation, WorkspaceAPIView, sent_no_body, workspace_id
from usergroups.services import end_users

NOT_FOUND = _("No end user of this workspace has this id.")
NOT_FOUND_WORDS = "`not_found`: no end user of this workspace has this id."


def read_input(request: Request) -> Any:
    """The body, or the query string for clients that cannot send a body with GET."""
    if not sent_no_body(request):
        return request.data
    params = query_params(request)
    return {name: params[name] for name in params} if params else request.data


class EndUserView(WorkspaceAPIView):
    """PUT creates or changes an end user, GET reads one, DELETE deletes one."""

    http_method_names = ["get", "put", "delete"]
    required_scopes = {"GET": scopes.READ, "PUT": scopes.WRITE, "DELETE": scopes.WRITE}
    operations = {
        "PUT": Operation(
            "put_end_user",
            "Create or change an end user",
            PutEndUserAnswer,
            request=PutEndUserSerializer,
        ),
        "GET": Operation(
            "get_end_user",
            "Get an end user",
            EndUserAnswer,
            request=EndUserIdSerializer,
            failures={404: NOT_FOUND_WORDS},
        ),
        "DELETE": Operation(
            "delete_end_user",
            "Delete an end user",
            DeleteEndUserAnswer,
            request=EndUserIdSerializer,
            failures={404: NOT_FOUND_WORDS},
        ),
    }

    def get(self, request: Request) -> Response:
        """The end user `end_user_id`. The body, or, for a client that cannot send a body with
        GET, no body and `end_user_id` in the query string; a query string beside a body is not
        read."""
        serializer = EndUserIdSerializer(data=read_input(request))
        serializer.is_valid(raise_exception=True)
        found = end_users.find_end_user(
            workspace_id(request), serializer.validated_data["end_user_id"]
        )
        if found is None:
            raise NotFound(NOT_FOUND)
        return Response({"success": 1, "end_user": EndUserSerializer(found).data})

    def put(self, request: Request) -> Response:
        """Creates the end user, or sets the given fields that differ (nothing is written when
        none does). Disabling refuses the person's embed tokens."""
        serializer = PutEndUserSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        end_user, created = end_users.put_end_user(
            workspace_id(request), serializer.validated_data["end_user_id"], serializer.changes()
        )
        return Response(
            {"success": 1, "created": created, "end_user": EndUserSerializer(end_user).data}
        )

    def delete(self, request: Request) -> Response:
        """Deletes the end user; their embed tokens stop working at once, and stay dead if the
        same id is created again."""
        serializer = EndUserIdSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        deleted = end_users.delete_end_user(
            workspace_id(request), serializer.validated_data["end_user_id"]
        )
        if deleted is None:
            raise NotFound(NOT_FOUND)
        return Response({"success": 1, "end_user": EndUserIdSerializer(deleted).data})


class EndUserListView(WorkspaceAPIView):
    """GET /api/user/end-user/list: the workspace's end users, by id, a page at a time."""

    http_method_names = ["get"]
    required_scopes = {"GET": scopes.READ}
    operations = {
        "GET": Operation(
            "list_end_users", "List end users", EndUserListAnswer, query=EndUserListQuerySerializer
        )
    }

    def get(self, request: Request) -> Response:
        """The workspace's end users by `end_user_id` (code point order)."""
        query = EndUserListQuerySerializer(data=query_params(request))
        query.is_valid(raise_exception=True)
        page, limit = query.validated_data["page"], query.validated_data["limit"]
        workspace, prefix = (
            workspace_id(request),
            query.validated_data.get("end_user_id_prefix", ""),
        )
        listed = end_users.list_end_users(workspace, prefix, offset=(page - 1) * limit, limit=limit)
        return Response(
            {
                "success": 1,
                "total_count": end_users.count_end_users(workspace, prefix),
                "page": page,
                "limit": limit,
                "end_users": EndUserSerializer(listed, many=True).data,
            }
        )
