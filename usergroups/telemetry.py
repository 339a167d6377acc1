"""The app's instruments, on the OpenTelemetry API: no-ops until the host configures an
SDK (the example project's is in ``example_project/metrics.py``).

Attributes are bounded: never a token, key, secret, person id or URL.
"""

from opentelemetry import metrics

from usergroups import __version__

meter = metrics.get_meter("usergroups", __version__)

#: Embed tokens checked by ``EmbedTokenAuthentication``: ``outcome`` ``verified`` or
#: ``refused``, and a refusal's ``code`` (``token_expired``, ``authentication_failed``,
#: ``origin_not_allowed``, ``permission_denied``).
embed_verifications = meter.create_counter(
    "usergroups.embed.verifications",
    unit="{verification}",
    description="Embed tokens checked at authentication, by outcome and refusal code.",
)
