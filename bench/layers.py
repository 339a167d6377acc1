"""Where the time of one request goes, layer by layer, in process.

``python -m bench.layers [N [CASE,CASE...]] [--wall]`` (Django settings and database from the environment, as
``bench.micro``: a seeded ``1k`` data set) calls the WSGI application directly for
baseline (0), baseline (1) and the get of ``/api/user``, with timers around the
functions that begin each layer. A sampling profiler spreads a request over thousands
of frames; this answers the question RESULTS.md asks (what does each layer cost between
baseline (0) and the get path) with a few dozen timers, whose own cost (about 0.3 µs
each) is small against the layers'. Each layer's time excludes the layers timed inside
it; the database layer is the driver's ``execute`` and ``fetch`` (a round trip on
PostgreSQL, the engine's work on SQLite). Cases run interleaved, several times; the
figures are the medians, in µs per request of this process's CPU time (steady on a
busy machine), or of wall time with ``--wall`` (which shows the database's round trips,
and every other process's load too).
"""

import importlib
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from typing import Any

# (layer, "module:Class.method"): the function whose call opens the layer. Order is the
# order of the table. A function missing in this version of a library is skipped.
HOOKS = [
    (
        "WSGI and Django's handler (request, signals)",
        "django.core.handlers.wsgi:WSGIHandler.__call__",
    ),
    ("WSGI and Django's handler (request, signals)", "django.http.response:HttpResponseBase.close"),
    ("middleware", "django.core.handlers.base:BaseHandler.get_response"),
    ("URL resolving, view call", "django.core.handlers.base:BaseHandler._get_response"),
    ("DRF dispatch", "rest_framework.views:APIView.dispatch"),
    ("authentication (key or DRF token lookup)", "rest_framework.request:Request._authenticate"),
    (
        "authentication (key or DRF token lookup)",
        "usergroups.auth.api_key:AuthorizationHeaderAuthentication.authenticate",
    ),
    ("permission and scope checks", "rest_framework.views:APIView.check_permissions"),
    ("throttling (off by default)", "rest_framework.views:APIView.check_throttles"),
    (
        "request body: reading and parsing JSON",
        "rest_framework.request:Request._load_data_and_files",
    ),
    ("request body: reading and parsing JSON", "django.http.request:HttpRequest.body"),
    ("request validation", "rest_framework.serializers:BaseSerializer.is_valid"),
    ("view code", "bench.baseline.views:bare"),
    ("view code", "bench.baseline.views:ConstantView.get"),
    ("view code", "usergroups.api.views:UserGroupView.get"),
    ("view code", "bench.site.views:EmbedVariablesView.get"),
    ("view code", "usergroups.api.embed_views:EmbedTokenView.post"),
    ("the group query (find_group)", "usergroups.services.groups:find_group"),
    ("the group query (find_group)", "usergroups.services.embed:current_grant"),
    ("embed token: sign or verify (PyJWT, Ed25519)", "usergroups.embed.tokens:sign"),
    ("embed token: sign or verify (PyJWT, Ed25519)", "usergroups.embed.tokens:verify"),
    ("response body (serializer, token unsealing)", "rest_framework.serializers:Serializer.data"),
    ("response: finalize, render JSON", "rest_framework.views:APIView.finalize_response"),
    ("response: finalize, render JSON", "django.template.response:SimpleTemplateResponse.render"),
    ("response: finalize, render JSON", "rest_framework.renderers:JSONRenderer.render"),
    ("database (driver execute and fetch)", "django.db.backends.utils:CursorWrapper._execute"),
    ("database (driver execute and fetch)", "django.db.backends.utils:CursorWrapper.fetchall"),
    ("database (driver execute and fetch)", "django.db.backends.utils:CursorWrapper.fetchone"),
    ("database (driver execute and fetch)", "django.db.backends.utils:CursorWrapper.fetchmany"),
    (
        "database (driver execute and fetch)",
        "django.db.backends.postgresql.base:DatabaseWrapper.is_usable",
    ),
]
LAYERS = list(dict.fromkeys(layer for layer, _ in HOOKS))


class Timers:
    """Exclusive wall time per layer: a stack of open calls, each charged its time less
    the time of the timed calls inside it."""

    def __init__(self, clock: Callable[[], float] = time.process_time) -> None:
        self.clock = clock
        self.totals: dict[str, float] = defaultdict(float)
        self.stack: list[list[float]] = []  # [start, time of timed children]

    def wrap(self, layer: str, func: Callable[..., Any]) -> Callable[..., Any]:
        totals, stack, clock = self.totals, self.stack, self.clock

        def timed(*args: Any, **kwargs: Any) -> Any:
            frame = [clock(), 0.0]
            stack.append(frame)
            try:
                return func(*args, **kwargs)
            finally:
                stack.pop()
                spent = clock() - frame[0]
                totals[layer] += spent - frame[1]
                if stack:
                    stack[-1][1] += spent

        timed.__wrapped__ = func  # type: ignore[attr-defined]
        return timed

    def install(self) -> None:
        for layer, target in HOOKS:
            module_name, _, path = target.partition(":")
            try:
                owner: Any = importlib.import_module(module_name)
            except ImportError:
                continue
            *parents, name = path.split(".")
            for parent in parents:
                owner = getattr(owner, parent)
            if name not in vars(owner):
                continue
            attribute = vars(owner)[name]
            if isinstance(attribute, property):
                setattr(owner, name, property(self.wrap(layer, attribute.fget)))
            else:
                setattr(owner, name, self.wrap(layer, getattr(owner, name)))


def main() -> None:
    from bench.micro import environ, setup

    args = [a for a in sys.argv[1:] if a != "--wall"]
    timers = Timers(time.perf_counter if "--wall" in sys.argv else time.process_time)
    # Before the WSGI handler is made: it binds its middleware chain once, at load.
    app, cases = setup(before_handler=timers.install)
    n = int(args[0]) if args else 2000
    names = args[1].split(",") if len(args) > 1 else ["baseline0", "baseline1", "usergroups"]

    def call(case: str) -> None:
        path, auth, body, *method = cases[case]
        status: list[str] = []
        request = environ(path, auth, body, *method)
        out = app(request, lambda s, h, exc_info=None: status.append(s))
        b"".join(out)
        out.close()
        assert status[0].startswith("200"), (case, status)

    for case in names:
        for _ in range(200):
            call(case)
    runs: dict[str, list[dict[str, float]]] = defaultdict(list)
    for _ in range(5):
        for case in names:
            timers.totals.clear()
            for _ in range(n):
                call(case)
            runs[case].append({k: v / n * 1e6 for k, v in timers.totals.items()})
    table = {
        case: {layer: statistics.median(r.get(layer, 0.0) for r in runs[case]) for layer in LAYERS}
        for case in names
    }
    width = max(map(len, LAYERS))
    print(f"{'layer':{width}s}  " + "  ".join(f"{c:>10s}" for c in names))
    for layer in LAYERS:
        print(f"{layer:{width}s}  " + "  ".join(f"{table[c][layer]:10.1f}" for c in names))
    print(f"{'total':{width}s}  " + "  ".join(f"{sum(table[c].values()):10.1f}" for c in names))


if __name__ == "__main__":
    main()
