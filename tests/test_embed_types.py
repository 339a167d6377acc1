"""embed.d.ts, the types shipped beside embed.js, pass ``tsc --strict`` without
``skipLibCheck``: tests/typescript/consumer.ts (a framing page and a dashboard written
against them) is type-checked with the TypeScript that tests/typescript/package-lock.json
pins, installed there by ``npm ci`` when it is missing.
"""

import json
import subprocess

import pytest

from tests.support import ROOT

PROJECT = ROOT / "tests" / "typescript"

pytestmark = pytest.mark.needs("npm")


def pinned_typescript() -> str:
    lock = json.loads((PROJECT / "package-lock.json").read_text())
    return lock["packages"]["node_modules/typescript"]["version"]


def installed_typescript() -> str | None:
    manifest = PROJECT / "node_modules" / "typescript" / "package.json"
    return json.loads(manifest.read_text())["version"] if manifest.exists() else None


def npm(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(args, cwd=PROJECT, capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def typescript() -> str:
    """The pinned TypeScript in tests/typescript/node_modules (npm ci when it is missing
    or another version); its version."""
    pinned = pinned_typescript()
    if installed_typescript() != pinned:
        done = npm("npm", "ci", "--no-audit", "--no-fund")
        assert done.returncode == 0, done.stdout + done.stderr
    assert installed_typescript() == pinned
    return pinned


def test_the_pin_is_exact():
    spec = json.loads((PROJECT / "package.json").read_text())["devDependencies"]["typescript"]
    assert spec == pinned_typescript()  # "5.9.3", not a range: CI checks with one compiler


def test_a_consumer_of_serve_tokens_and_connect_type_checks_under_strict(typescript):
    config = (PROJECT / "tsconfig.json").read_text()
    assert '"strict": true' in config and '"skipLibCheck"' not in config
    # --no-install: the project's tsc, never one npx would fetch.
    done = npm("npx", "--no-install", "tsc", "--noEmit", "-p", ".")
    assert done.returncode == 0, done.stdout + done.stderr
    version = npm("npx", "--no-install", "tsc", "--version")
    assert version.stdout.strip() == f"Version {typescript}"
