from django.conf import settings
from django.contrib import admin
from django.http import HttpRequest, HttpResponse
from django.urls import include, path
from django.views.generic import RedirectView
from drf_spectacular.views import SpectacularAPIView


def health(request: HttpRequest) -> HttpResponse:
    """For the load balancer: the process answers. No database query, so that a database
    outage (which every host shares) does not take every host out of the balancer."""
    return HttpResponse("ok", content_type="text/plain")


urlpatterns = [
    # The site's front page is the demo: a customer site embedding the dashboards.
    path("", RedirectView.as_view(pattern_name="dashboards:customer-site"), name="home"),
    path("health", health, name="health"),
    path("admin/", admin.site.urls),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("", include("usergroups.urls")),
    # The embed flow, visible: customer site, embedded dashboard, its data endpoint.
    path("", include("example_project.dashboards.urls")),
]

if settings.METRICS:
    from prometheus_client.django import PrometheusDjangoView

    # Every process's metrics (example_project/metrics.py), for Prometheus only: a proxy in
    # front must not route /metrics from the internet.
    urlpatterns.append(
        path("metrics", PrometheusDjangoView.as_view(multiprocess_mode=True), name="metrics")
    )
