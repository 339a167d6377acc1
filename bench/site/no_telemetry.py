"""The site without instruments (``BENCH_TELEMETRY=none``, bench/site/wsgi.py): the
baseline of issue 34's rows, what the app's telemetry costs with the API alone and with
an SDK.

A bench-only harness, never the app's: the OpenTelemetry API has no switch that makes
its calls free (without an SDK they still go through its proxies), and a copy of the tree
without them would drift from the tree measured. So every public function of
``usergroups.telemetry`` is replaced by one of the same shape that does nothing, before
the app's modules are imported: its decorators (``spanned``, ``times_audit_writes``) run
at their import.
"""

import contextlib
import inspect
import sys
from collections.abc import Iterator
from typing import Any

from opentelemetry.trace import INVALID_SPAN, Span


def _nothing(*args: Any, **kwargs: Any) -> None:
    return None


@contextlib.contextmanager
def _no_span(*args: Any, **kwargs: Any) -> Iterator[Span]:
    yield INVALID_SPAN


# What each function answers, where it answers something: the rest answer None.
ANSWERS = {
    "started": lambda: 0.0,
    "span": _no_span,
    "webhook_attempt": _no_span,
    "spanned": lambda name, **attributes: lambda function: function,
    "times_audit_writes": lambda write: write,
}


def remove() -> None:
    """Replaces ``usergroups.telemetry``'s public functions; before the app is loaded."""
    if "usergroups.services" in sys.modules:
        raise RuntimeError("the app is loaded: its decorators have run with the telemetry")
    from usergroups import telemetry

    for name, value in vars(telemetry).copy().items():
        if inspect.isfunction(value) and value.__module__ == telemetry.__name__:
            if not name.startswith("_"):
                setattr(telemetry, name, ANSWERS.get(name, _nothing))
