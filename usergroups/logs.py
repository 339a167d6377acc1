"""The app's loggers: each record carries the request id being served (``request_id``).

A filter on each of the app's loggers, so a host's formatter may use
``%(request_id)s`` without any setting; "-" outside a request.
"""

import logging

from usergroups import audit_context


class RequestIDFilter(logging.Filter):
    """Sets ``record.request_id``: the ``X-Request-ID`` of the request being served."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.request_id = audit_context.current_request_id() or "-"
        return True


_FILTER = RequestIDFilter()


def get_logger(name: str) -> logging.Logger:
    """``logging.getLogger(name)``, its records carrying the request id."""
    logger = logging.getLogger(name)
    if _FILTER not in logger.filters:
        logger.addFilter(_FILTER)
    return logger
