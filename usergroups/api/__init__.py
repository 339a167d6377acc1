"""The HTTP API (``/api/user`` and ``/api/user/embed-token``): DRF views, their
serializers, parsing, throttling, errors and the OpenAPI description."""
