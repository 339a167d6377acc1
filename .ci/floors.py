"""Install the oldest release pyproject.toml allows of each runtime dependency.

    python .ci/floors.py [--extra NAME ...] [--dry-run]

Reads ``[project] dependencies`` (and the optional-dependency groups named by --extra),
takes each requirement's ``>=`` floor and installs exactly ``name==floor`` into the running
Python's environment, then runs ``pip check``. tox's ``lowest`` env runs it after
installing the package and before the suite, so the suite runs on the floors the
metadata declares, read from the metadata itself: a floor that is not true fails there.
A runtime requirement without a ``>=`` floor is an error: it would allow anything.
"""

import argparse
import subprocess
import sys
import tomllib
from pathlib import Path

from packaging.requirements import Requirement

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"

#: Packages of the test extra released in lockstep with a runtime requirement, each
#: requiring exactly its version: pinned to that requirement's floor beside it, else
#: ``pip check`` fails (the OpenTelemetry SDK requires its own version of the API).
LOCKSTEP = {"opentelemetry-api": ["opentelemetry-sdk"]}


def floors(extras: list[str]) -> list[str]:
    project = tomllib.loads(PYPROJECT.read_text())["project"]
    requirements = list(project["dependencies"])
    for extra in extras:
        requirements += project["optional-dependencies"][extra]
    pins = []
    for text in requirements:
        requirement = Requirement(text)
        if requirement.name == project["name"]:  # an extra naming another of ours
            continue
        if requirement.marker and not requirement.marker.evaluate():
            continue
        lowest = [spec.version for spec in requirement.specifier if spec.operator == ">="]
        if len(lowest) != 1:
            raise SystemExit(f"{text!r} in pyproject.toml has no single >= floor")
        pins.append(f"{requirement.name}{_extras(requirement)}=={lowest[0]}")
        pins += [f"{companion}=={lowest[0]}" for companion in LOCKSTEP.get(requirement.name, [])]
    return pins


def _extras(requirement: Requirement) -> str:
    return f"[{','.join(sorted(requirement.extras))}]" if requirement.extras else ""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--extra", action="append", default=[], help="an optional-dependency group")
    parser.add_argument("--dry-run", action="store_true", help="print the pins, install nothing")
    args = parser.parse_args()
    pins = floors(args.extra)
    print("floors:", " ".join(pins), flush=True)
    if args.dry_run:
        return 0
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check"]
    subprocess.run([*pip, "install", "--quiet", *pins], check=True)
    # Every installed package's own requirements still hold at these floors.
    return subprocess.run([*pip, "check"]).returncode


if __name__ == "__main__":
    sys.exit(main())
