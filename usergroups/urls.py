from django.core.exceptions import ImproperlyConfigured
from django.urls import re_path

from usergroups.checks import check_rest_framework_version

# Django imports URLconfs while running the system checks, and a DRF too old for this
# Django fails to import its views there, so E010 would never be shown: say it here.
if too_old := check_rest_framework_version():
    raise ImproperlyConfigured(f"{too_old[0].msg} {too_old[0].hint} ({too_old[0].id})")

from usergroups.api.audit_views import AuditEventListView  # noqa: E402
from usergroups.api.embed_views import (  # noqa: E402
    EmbedTokenIntrospectView,
    EmbedTokenRevokeView,
    EmbedTokenView,
    JWKSView,
)
from usergroups.api.end_user_views import EndUserListView, EndUserView  # noqa: E402
from usergroups.api.views import UserGroupListView, UserGroupView  # noqa: E402
from usergroups.api.webhook_views import WebhookListView, WebhookView  # noqa: E402

app_name = "usergroups"

urlpatterns = [
    # With or without a trailing slash, never redirected. The optional slash is written
    # as "(?:/)?" so that OpenAPI generators, which simplify the regex, name the path
    # "/api/user" as the docs do (a bare "/?" would come out as "/api/user/").
    re_path(r"^api/user(?:/)?$", UserGroupView.as_view(), name="user"),
    re_path(r"^api/user/list(?:/)?$", UserGroupListView.as_view(), name="user-list"),
    re_path(r"^api/user/embed-token(?:/)?$", EmbedTokenView.as_view(), name="embed-token"),
    re_path(
        r"^api/user/embed-token/introspect(?:/)?$",
        EmbedTokenIntrospectView.as_view(),
        name="embed-token-introspect",
    ),
    re_path(
        r"^api/user/embed-token/revoke(?:/)?$",
        EmbedTokenRevokeView.as_view(),
        name="embed-token-revoke",
    ),
    re_path(r"^api/user/embed-token/jwks(?:/)?$", JWKSView.as_view(), name="embed-token-jwks"),
    re_path(r"^api/user/end-user(?:/)?$", EndUserView.as_view(), name="end-user"),
    re_path(r"^api/user/end-user/list(?:/)?$", EndUserListView.as_view(), name="end-user-list"),
    re_path(r"^api/user/audit(?:/)?$", AuditEventListView.as_view(), name="audit"),
    re_path(r"^api/user/webhook(?:/)?$", WebhookView.as_view(), name="webhook"),
    re_path(r"^api/user/webhook/list(?:/)?$", WebhookListView.as_view(), name="webhook-list"),
]
