"""``/api/user``: GET gets or creates a user group, POST rotates its token."""

from collections.abc import Callable, Iterable, Mapping
from functools import partial
from typing import Any, ClassVar, NamedTuple

from django.http import HttpRequest
from django.http.response import HttpResponseBase
from django.utils.http import parse_header_parameters
from django.utils.translation import gettext_lazy as _
from django.utils.translation import ngettext
from rest_framework.exceptions import NotAuthenticated, NotFound, ValidationError
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.parsers import BaseParser
from rest_framework.renderers import BaseRenderer, JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.serializers import Serializer
from rest_framework.throttling import BaseThrottle
from rest_framework.views import APIView

from usergroups import audit_context, scopes
from usergroups.api.chunked import ChunkedBodyRequest, has_transfer_coding
from usergroups.api.parsers import JSONObjectParser, loads_strict
from usergroups.api.querystring import query_params
from usergroups.api.serializers import (
    DeleteAnswer,
    DeleteRequestSerializer,
    GetOrCreateAnswer,
    GetOrCreateRequestSerializer,
    ListAnswer,
    ListedGroupSerializer,
    ListQuerySerializer,
    NamedGroupSerializer,
    RotateAnswer,
    RotatedGroupSerializer,
    RotateRequestSerializer,
    UpdateRequestSerializer,
    UserGroupAnswer,
    UserGroupSerializer,
)
from usergroups.api.throttling import APIKeyRateThrottle
from usergroups.auth.api_key import APIKeyAuthentication
from usergroups.auth.permissions import HasAPIKey, HasScope, require_scope
from usergroups.conf import usergroups_settings
from usergroups.errors.failures import Conflict
from usergroups.errors.handler import exception_handler
from usergroups.models import APIKey
from usergroups.services import groups

QUERY_FIELDS = ("user_group_id", "name", "parent_user_group_id")
QUERY_JSON_FIELDS = ("mapping", "properties")


class AlwaysJSON(DefaultContentNegotiation):
    """The API answers JSON whatever ``Accept`` says, instead of 406."""

    def select_renderer(
        self, request: Request, renderers: Iterable[BaseRenderer], format_suffix: str | None = None
    ) -> tuple[BaseRenderer, str]:
        renderer = next(iter(renderers))
        return renderer, renderer.media_type

    def select_parser(self, request: Request, parsers: Iterable[BaseParser]) -> BaseParser | None:
        """Only a body declared as JSON is read as JSON (else 415): DRF's matching
        would also take a wildcard such as ``*/*`` or ``application/*`` for it."""
        parser = super().select_parser(request, parsers)
        if parser is None or media_type(request.content_type) != parser.media_type:
            return None
        return parser


def media_type(content_type: str) -> str:
    """The ``type/subtype`` of a Content-Type header, lowercased; "" if unreadable."""
    try:
        return parse_header_parameters(content_type)[0]
    except ValueError:  # Django refuses a header over its length limit
        return ""


def sent_no_body(request: Request) -> bool:
    """Whether the request came without a body (DRF has no stream for an empty one): then,
    and only then, the query string stands in for it. A body sent, even ``{}``, is read."""
    request.data  # noqa: B018 (parses first: a malformed body is a 400 whatever the query)
    return request.stream is None


def get_or_create_input(request: Request) -> Any:
    """The body, or the query string for clients that cannot send a body with GET."""
    if not sent_no_body(request):
        return request.data
    params = query_params(request)
    if not params:
        return request.data
    data: dict[str, Any] = {name: params[name] for name in QUERY_FIELDS if name in params}
    errors = {}
    for name in QUERY_JSON_FIELDS:
        if name in params:
            try:
                text = params.get(name, "")
                data[name] = loads_strict(text, usergroups_settings.MAX_PROPERTIES_DEPTH)
            except ValueError as exc:
                errors[name] = [_("Must be JSON text: %(reason)s") % {"reason": exc}]
    if errors:
        raise ValidationError(errors)
    return data


#: A parent named that is no group of the workspace: 404, like any group named that is not.
UNKNOWN_PARENT = _("No user group of this workspace has the id parent_user_group_id names.")
UNKNOWN_PARENT_WORDS = "`not_found`: `parent_user_group_id` names no group of this workspace."
PARENT_CONFLICT_WORDS = (
    "under `parent_user_group_id` some group would be deeper than MAX_HIERARCHY_DEPTH, or "
    "(a move) under itself or one of its descendants."
)


def refused_parent(exc: groups.InvalidParent) -> NotFound | Conflict:
    """404 for a parent that does not exist; 409 for one the hierarchy as stored refuses
    (a cycle, too deep): the request is well formed either way."""
    if isinstance(exc, groups.UnknownParent):
        return NotFound(UNKNOWN_PARENT)
    return Conflict(str(exc))


class Operation(NamedTuple):
    """What the OpenAPI description (usergroups.api.openapi) says of a view's method beside
    its docstring: plain data, so that the views need no schema library."""

    operation_id: str
    summary: str
    answer: type[Serializer]
    #: The body; a GET's query string stands in for one not sent (each field as text).
    request: type[Serializer] | None = None
    #: The query parameters of a GET that reads no body.
    query: type[Serializer] | None = None
    #: The failures beyond every operation's, by status: what each means here.
    failures: Mapping[int, str] = {}
    #: The scopes, where the view checks them itself (not in ``required_scopes``).
    scopes: tuple[str, ...] | None = None


# The actor until the key is known; nothing is written before authentication.
BEFORE_AUTHENTICATION = audit_context.system("api")


class WorkspaceAPIView(APIView):
    """What every endpoint shares: API key auth, strict JSON, the contract's errors."""

    authentication_classes = [APIKeyAuthentication]
    permission_classes = [HasAPIKey, HasScope]
    #: The scope each method needs (HasScope checks it before anything is read); a
    #: method left out checks its own, as GET of /api/user does after validation.
    required_scopes: dict[str, str] = {}
    #: Each method's :class:`Operation`.
    operations: ClassVar[dict[str, Operation]] = {}
    #: What each failure every operation may answer means (its code first), beside what
    #: its :class:`Operation` adds; for the OpenAPI description.
    failures: ClassVar[dict[int, str]] = {
        400: "`parse_error` (not a JSON object, nested too deep) or `invalid` (a bad field, "
        "or a query parameter not percent-encoded UTF-8): `fields` names each.",
        401: "`not_authenticated` (no key; `WWW-Authenticate: Token`) or "
        "`authentication_failed` (a bad, revoked or expired key).",
        403: "`permission_denied`: the key lacks a scope of `x-scopes` (the message names it); "
        "nothing changes.",
        411: "`length_required`: a chunked body this server cannot read.",
        413: "`request_too_large`: the body is over MAX_BODY_BYTES.",
        415: "`unsupported_media_type`: a body that is not JSON.",
        429: "`throttled`: over the per-key rate; see Retry-After.",
        501: "`unsupported_transfer_coding`: a body sent with a transfer coding other than "
        "`chunked` alone; nothing is read.",
        503: "`service_unavailable`: the database failed; see Retry-After. Where a token is "
        "shown, `token_unavailable`: no configured secret opens it.",
    }
    parser_classes = [JSONObjectParser]
    renderer_classes = [JSONRenderer]
    content_negotiation_class = AlwaysJSON
    metadata_class = None  # OPTIONS is not part of the API: 405 like any other method

    def initialize_request(self, request: HttpRequest, *args: Any, **kwargs: Any) -> Request:
        if not has_transfer_coding(request):
            return super().initialize_request(request, *args, **kwargs)
        # DRF's own construction, of the request that reads a chunked body (Django would
        # read it as empty): usergroups.api.chunked.
        return ChunkedBodyRequest(
            request,
            parsers=self.get_parsers(),
            authenticators=self.get_authenticators(),
            negotiator=self.get_content_negotiator(),
            parser_context=self.get_parser_context(request),
        )

    #: The request's ``X-Request-ID`` (valid, else made): in its events, logs and answer.
    request_id: str = ""

    def dispatch(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        # The audit trail's context for the whole request; the key is named once known.
        with audit_context.acting_for_request(BEFORE_AUTHENTICATION, request.META) as context:
            self.request_id = context.request_id
            return super().dispatch(request, *args, **kwargs)

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        super().initial(request, *args, **kwargs)
        if isinstance(request.auth, APIKey):
            audit_context.set_actor(audit_context.api_key(request.auth.prefix))
        if isinstance(request, ChunkedBodyRequest):
            request.read_body()  # 400, 411 or 413 now, once DRF's checks passed

    def finalize_response(
        self, request: Request, response: Response, *args: Any, **kwargs: Any
    ) -> Response:
        response = super().finalize_response(request, response, *args, **kwargs)
        response["X-Request-ID"] = self.request_id or audit_context.new_request_id()
        return response

    def get_exception_handler(self) -> Callable[..., Response | None]:
        return exception_handler

    def get_throttles(self) -> list[BaseThrottle]:
        return [APIKeyRateThrottle()] if usergroups_settings.THROTTLE_RATE else []


def request_key(request: Request) -> APIKey:
    """The request's API key (which :class:`HasAPIKey` made sure of)."""
    api_key = request.auth
    if not isinstance(api_key, APIKey):
        raise NotAuthenticated()
    return api_key


def workspace_id(request: Request) -> int:
    """The workspace of the request's API key."""
    return request_key(request).workspace_id


class UserGroupView(WorkspaceAPIView):
    """GET gets or creates, POST rotates; PUT updates and DELETE deletes (extensions)."""

    http_method_names = ["get", "post", "put", "delete"]
    # GET needs read for a group that exists, write for one it would create: the
    # service checks, once it knows which (see get).
    required_scopes = {"POST": scopes.ROTATE, "PUT": scopes.WRITE, "DELETE": scopes.WRITE}
    operations = {
        "GET": Operation(
            "get_or_create_user_group",
            "Get or create a user group",
            GetOrCreateAnswer,
            request=GetOrCreateRequestSerializer,
            failures={404: UNKNOWN_PARENT_WORDS, 409: f"`conflict`: {PARENT_CONFLICT_WORDS}"},
            scopes=(scopes.READ, scopes.WRITE),
        ),
        "POST": Operation(
            "rotate_user_group_token",
            "Rotate a user group token",
            RotateAnswer,
            request=RotateRequestSerializer,
            failures={404: "`not_found`: no group of this workspace has this token."},
        ),
        "PUT": Operation(
            "update_user_group",
            "Update a user group (extension)",
            UserGroupAnswer,
            request=UpdateRequestSerializer,
            failures={
                404: "`not_found`: no group of this workspace has this id, or "
                "`parent_user_group_id` names none.",
                409: f"`conflict`: another group has `new_user_group_id`, or {PARENT_CONFLICT_WORDS}",
            },
        ),
        "DELETE": Operation(
            "delete_user_group",
            "Delete a user group (extension)",
            DeleteAnswer,
            request=DeleteRequestSerializer,
            failures={
                404: "`not_found`: no group of this workspace has this id or token.",
                409: '`conflict`: the group has child groups; send `"cascade": true`.',
            },
        ),
    }

    def get(self, request: Request) -> Response:
        """Returns the group of `user_group_id`, creating it if unknown (`new_user_group` says
        which). A known group is returned as stored, with the same token. Getting one needs
        `read`, creating one `write`, checked after the body is validated: a key without `write`
        creates nothing (403 naming `write`). The body, or, for a client that cannot send
        a body with GET, no body and the same fields in the query string (`mapping` and
        `properties` as JSON text); a query string beside a body is not read."""
        serializer = GetOrCreateRequestSerializer(data=get_or_create_input(request))
        serializer.is_valid(raise_exception=True)
        data, api_key = serializer.validated_data, request_key(request)
        try:
            group, created = groups.get_or_create_group(
                api_key.workspace_id,
                data["user_group_id"],
                name=data.get("name"),
                mapping=data.get("mapping"),
                properties=data.get("properties"),
                parent_user_group_id=data.get("parent_user_group_id"),
                authorize=partial(require_scope, api_key),
            )
        except groups.InvalidParent as exc:
            raise refused_parent(exc) from None
        return Response(
            {"success": 1, "new_user_group": created, "user_group": UserGroupSerializer(group).data}
        )

    def post(self, request: Request) -> Response:
        """Replaces the token; the old one stops working at once, and so does every embed token
        minted for the group."""
        serializer = RotateRequestSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        group = groups.rotate_token(
            workspace_id(request), serializer.validated_data["current_token"]
        )
        if group is None:
            raise NotFound(_("No user group of this workspace has this token."))
        return Response({"success": 1, "user_group": RotatedGroupSerializer(group).data})

    def put(self, request: Request) -> Response:
        """Changes the group named by `user_group_id`: given fields replace stored ones. The token
        does not change."""
        serializer = UpdateRequestSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        try:
            group = groups.update_group(
                workspace_id(request),
                serializer.validated_data["user_group_id"],
                serializer.changes(),
            )
        except groups.ProvidedIdTaken:
            # Well formed, and refused by what is stored: a conflict, as for a parent.
            raise Conflict(
                _("Another user group of this workspace has the id new_user_group_id names.")
            )
        except groups.InvalidParent as exc:
            raise refused_parent(exc) from None
        if group is None:
            raise NotFound(_("No user group of this workspace has this id."))
        return Response({"success": 1, "user_group": UserGroupSerializer(group).data})

    def delete(self, request: Request) -> Response:
        """Deletes the group; its token and embed tokens stop working at once. With `cascade`, its
        descendants go too, in one transaction."""
        serializer = DeleteRequestSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        cascade = serializer.validated_data["cascade"]
        try:
            deleted = groups.delete_group(
                workspace_id(request),
                provided_id=serializer.validated_data.get("user_group_id"),
                token=serializer.validated_data.get("current_token"),
                cascade=cascade,
            )
        except groups.HasChildren as exc:
            count = exc.descendants
            message = ngettext(
                'The user group has %(count)s descendant group; send "cascade": true '
                "to delete it too.",
                'The user group has %(count)s descendant groups; send "cascade": true '
                "to delete them with it.",
                count,
            )
            raise Conflict(message % {"count": count}) from None
        if not deleted:
            raise NotFound(_("No user group of this workspace matches."))
        answer: dict[str, Any] = {
            "success": 1,
            "user_group": NamedGroupSerializer(deleted[0]).data,
        }
        if cascade:
            answer["deleted_count"] = len(deleted)
        return Response(answer)


class UserGroupListView(WorkspaceAPIView):
    """GET /api/user/list: the workspace's groups, a page at a time, without tokens."""

    http_method_names = ["get"]
    required_scopes = {"GET": scopes.READ}
    operations = {
        "GET": Operation(
            "list_user_groups",
            "List user groups (extension)",
            ListAnswer,
            query=ListQuerySerializer,
        )
    }

    def get(self, request: Request) -> Response:
        """The workspace's groups, oldest first, without tokens."""
        query = ListQuerySerializer(data=query_params(request))
        query.is_valid(raise_exception=True)
        page, size = query.validated_data["page"], query.validated_data["page_size"]
        workspace, prefix = (
            workspace_id(request),
            query.validated_data.get("provided_id_prefix", ""),
        )
        parent = query.validated_data.get("parent_user_group_id")
        listed = groups.list_groups(
            workspace,
            prefix,
            parent_user_group_id=parent,
            offset=(page - 1) * size,
            limit=size,
        )
        return Response(
            {
                "success": 1,
                "total_count": groups.count_groups(workspace, prefix, parent),
                "page": page,
                "page_size": size,
                "user_groups": ListedGroupSerializer(listed, many=True).data,
            }
        )
