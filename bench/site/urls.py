from django.urls import path, re_path

from bench.baseline.views import ConstantView, NoAuthenticationView, ObviousGroupView, bare
from bench.site.views import EmbedVariablesView
from example_project.urls import urlpatterns as example_urlpatterns

urlpatterns = [
    path("bench/bare", bare),  # baseline (0)
    path("bench/constant", ConstantView.as_view()),  # baseline (1)
    path("bench/noauth", NoAuthenticationView.as_view()),  # (1-): DRF, no authentication
    re_path(r"^bench/obvious/?$", ObviousGroupView.as_view()),  # baseline (2)
    path("bench/embed", EmbedVariablesView.as_view()),  # a host's view, for verification
    *example_urlpatterns,
]
