import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bench.site.settings")
if os.environ.get("BENCH_TELEMETRY") == "none":
    from bench.site import no_telemetry

    no_telemetry.remove()

application = get_wsgi_application()
