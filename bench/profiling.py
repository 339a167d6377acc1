"""``--profile``: py-spy on one gunicorn worker while the app's run of a scenario is
loaded, and where the worker's samples went. Sampling from outside: nothing in the
process is patched or wrapped, so what it shows is the code as it runs."""

import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from bench import OUT, log

# Each sample counts once, in the first part (in this order) that its stack passes
# through: the database wherever it is called from, then signing and verifying, and so on
# out to gunicorn. py-spy names a frame "function (package/module.py:line)".
PARTS = [
    (
        "database: Django's backend and the driver",
        ("(django/db/backends/", "(psycopg/", "(sqlite3/"),
    ),
    ("ORM: building queries, rows into objects", ("(django/db/models/",)),
    ("JWS: PyJWT and cryptography", ("(jwt/", "(cryptography/")),
    ("authentication classes, the rest", ("authenticat",)),
    ("the app's code, the rest", ("(usergroups/",)),
    ("DRF and the peers: parsing, serializers, rendering", ("(rest_framework", "(knox/")),
    ("Django: handler, middleware, URL resolving", ("(django/",)),
    ("gunicorn: HTTP parsing, sockets", ("",)),
]


def profile(name: str, pid: int, load: Callable[[], object]) -> None:
    """py-spy on worker ``pid`` for 6 s while ``load()`` runs (8 s of wrk):
    bench/out/profile-NAME.txt (collapsed stacks) and .svg (a flame graph)."""
    py_spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    for fmt, suffix in (("raw", "txt"), ("flamegraph", "svg")):
        out = OUT / f"profile-{name}.{suffix}"
        spy = subprocess.Popen(
            [py_spy, "record", "-p", str(pid), "-d", "6", "-r", "250", "-f", fmt, "-o", str(out)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        load()
        spy.wait(30)
    log(f"profile in {OUT / f'profile-{name}.txt'} (and .svg)")
    print(summarize(OUT / f"profile-{name}.txt"), flush=True)


def summarize(path: Path) -> str:
    """The share of the samples in each of :data:`PARTS`, from py-spy's raw output."""
    counts = dict.fromkeys([name for name, _ in PARTS], 0)
    total = 0
    for line in path.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not count.isdigit():
            continue
        total += int(count)
        name = next(name for name, needles in PARTS if any(n in stack for n in needles))
        counts[name] += int(count)
    lines = [f"  {n * 100 / max(total, 1):5.1f}%  {name}" for name, n in counts.items()]
    return f"{path.name}: {total} samples\n" + "\n".join(lines)
