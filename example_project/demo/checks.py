"""The example project's own system check: a missing secret key, named by its variable.

``usergroups.E004`` says that the secret sealing group tokens is missing, in the terms of
Django settings. Someone running the example project sets environment variables, so this
check names them: ``DJANGO_SECRET_KEY``, or ``DJANGO_DEBUG=true`` for a local trial.
"""

from django.conf import settings
from django.core.checks import Error, Tags, register
from django.core.exceptions import ImproperlyConfigured


@register(Tags.security)
def check_secret_key_variable(app_configs, **kwargs):
    try:
        secret_key = settings.SECRET_KEY  # settings.py leaves it unset in this case
    except ImproperlyConfigured:  # Django's "must not be empty"
        secret_key = ""
    if secret_key:
        return []
    return [
        Error(
            "DJANGO_SECRET_KEY is not set, and DJANGO_DEBUG is not true.",
            hint="Set DJANGO_SECRET_KEY to a long random string (at least 50 characters) "
            "for a real deployment, or DJANGO_DEBUG=true for a local trial, which uses a "
            "fixed development key (make demo does).",
            id="example_project.E001",
        )
    ]
