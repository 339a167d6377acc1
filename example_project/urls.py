from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("", include("usergroups.urls")),
    # The embed flow, visible: customer site, embedded dashboard, its data endpoint.
    path("", include("example_project.dashboards.urls")),
]
