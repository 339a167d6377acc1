"""``--profile``: py-spy on one gunicorn worker while the get path is loaded, and where
its samples went."""

import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from bench import OUT, log


def profile(backend: str, pid: int, load: Callable[[], object]) -> None:
    """py-spy on worker ``pid`` while ``load()`` runs (about 7 s of wrk on the get path):
    bench/out/profile-*.{txt,svg}."""
    py_spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    for fmt, suffix in (("raw", "txt"), ("flamegraph", "svg")):
        out = OUT / f"profile-{backend}.{suffix}"
        spy = subprocess.Popen(
            [py_spy, "record", "-p", str(pid), "-d", "6", "-r", "250", "-f", fmt, "-o", str(out)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        load()
        spy.wait(30)
    log(f"{backend}: profile in {OUT / f'profile-{backend}.txt'} (and .svg)")
    print(summarize_profile(OUT / f"profile-{backend}.txt"))


def summarize_profile(path: Path) -> str:
    """Where a worker's samples went, from py-spy's raw output: each sample counts once,
    in the first part (in this order) that its stack passes through."""
    parts = [
        ("API key lookup (authentication)", ("find_api_key", "TokenAuthentication")),
        ("group lookup (find_group / get_or_create)", ("find_group", "get_or_create (")),
        ("request validation (serializer)", ("is_valid",)),
        ("response body (serializer, token unsealing)", ("Serializer.data",)),
        ("request body parsing (JSON)", ("Request._parse",)),
        ("rest of DRF's dispatch and the view", ("APIView.dispatch",)),
        ("Django: handler, middleware, signals", ("WSGIHandler.__call__",)),
        ("gunicorn: HTTP parsing, socket reads and writes", ("",)),
    ]
    counts = dict.fromkeys([name for name, _ in parts], 0)
    total = 0
    for line in path.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not count.isdigit():
            continue
        total += int(count)
        for name, needles in parts:
            if any(needle in stack for needle in needles):
                counts[name] += int(count)
                break
    lines = [f"  {n * 100 / max(total, 1):5.1f}%  {name}" for name, n in counts.items()]
    return f"{path.name}: {total} samples\n" + "\n".join(lines)
