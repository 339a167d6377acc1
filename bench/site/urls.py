from django.conf import settings
from django.urls import include, path

from bench.site import views

urlpatterns = [
    path("", include("usergroups.urls")),
    path("bench/embed", views.EmbedVariablesView.as_view()),
    path("bench/authtoken", views.AuthtokenConstantView.as_view()),
    path("bench/knox", views.KnoxVariablesView.as_view()),
    path("bench/simplejwt", views.SimpleJWTVariablesView.as_view()),
    path("bench/simplejwt/mint", views.SimpleJWTMintView.as_view()),
]

if settings.METRICS:  # as the example project serves them (example_project/urls.py)
    from prometheus_client.django import PrometheusDjangoView

    urlpatterns.append(path("metrics", PrometheusDjangoView.as_view(multiprocess_mode=True)))
