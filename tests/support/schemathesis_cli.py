"""``schemathesis run``, the command line a user runs, against a live server's schema.

Used by tests/test_fuzz.py (with its hooks) and tests/test_schemathesis.py (with the
repository's ``schemathesis.toml`` alone). Nothing in the caller's environment that
configures schemathesis leaks in; the server is on loopback, so no proxy is used.
"""

import os
import subprocess
import sys
from pathlib import Path

from tests.support import ROOT


def run_schemathesis(
    base_url: str,
    api_key: str,
    config: Path,
    *options: str,
    cwd: Path,
    env: dict[str, str] | None = None,
    timeout: float = 900,
) -> subprocess.CompletedProcess[str]:
    """``schemathesis --config-file CONFIG run <schema> --header "Authorization: Token
    KEY" OPTIONS`` in ``cwd``, with ``env`` added to a clean environment; its output."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("SCHEMATHESIS_")}
    return subprocess.run(
        [
            str(Path(sys.executable).parent / "schemathesis"),
            "--no-color",
            "--config-file",
            str(config),
            "run",
            f"{base_url}/api/schema/?format=json",
            "--header",
            f"Authorization: Token {api_key}",
            *options,
        ],
        cwd=cwd,
        env={**clean, "PYTHONPATH": str(ROOT), "NO_PROXY": "*", **(env or {})},
        capture_output=True,
        text=True,
        timeout=timeout,
    )
