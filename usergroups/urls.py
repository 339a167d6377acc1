from django.urls import re_path

from .views import UserGroupListView, UserGroupView

app_name = "usergroups"

urlpatterns = [
    # With or without a trailing slash, never redirected. The optional slash is written
    # as "(?:/)?" so that OpenAPI generators, which simplify the regex, name the path
    # "/api/user" as the docs do (a bare "/?" would come out as "/api/user/").
    re_path(r"^api/user(?:/)?$", UserGroupView.as_view(), name="user"),
    re_path(r"^api/user/list(?:/)?$", UserGroupListView.as_view(), name="user-list"),
]
