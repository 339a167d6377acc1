"""``make bench``: django-usergroups against two DRF baselines (see bench/run.py).

The paths and the progress log that the benchmark's modules share.
"""

import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
OUT = BENCH / "out"  # data sets, server logs, raw results, profiles: never committed


def log(message: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", flush=True)
