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

#: Packages of the extras released in lockstep with the OpenTelemetry API, each requiring
#: the API's exact version (or the SDK's): pinned at the floor their extra declares,
#: beside the API's, else ``pip check`` fails on the newest of them.
LOCKSTEP = {"opentelemetry-sdk", "opentelemetry-exporter-prometheus"}


def floors(extras: list[str]) -> list[str]:
    project = tomllib.loads(PYPROJECT.read_text())["project"]
    requirements = list(project["dependencies"])
    for extra in extras:
        requirements += project["optional-dependencies"][extra]
    requirements += sorted(
        {
            text
            for group in project["optional-dependencies"].values()
            for text in group
            if Requirement(text).name in LOCKSTEP and text not in requirements
        }
    )
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
