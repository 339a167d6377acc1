"""What the built sdist and wheel in DIST hold, checked against what an index should get.

    python .ci/dist_check.py dist/

- The sdist holds none of the test suite (the suite needs the repository: see MANIFEST.in)
  and carries LICENSE, README.md, CHANGELOG.md and pyproject.toml.
- The wheel holds every file of the package that the sdist holds (templates, static
  files, migrations, py.typed), the LICENSE, and nothing outside ``usergroups/``.
- The metadata states the version of ``usergroups.__version__``, the MIT license
  expression and the project URLs.
"""

import ast
import sys
import tarfile
import zipfile
from email.parser import Parser
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main(dist: Path) -> int:
    (sdist,) = dist.glob("*.tar.gz")
    (wheel,) = dist.glob("*.whl")
    problems = []

    with tarfile.open(sdist) as archive:
        # Names inside the top folder "django_usergroups-X.Y.Z/".
        in_sdist = {
            member.name.split("/", 1)[1]
            for member in archive.getmembers()
            if member.isfile() and "/" in member.name
        }
    test_files = sorted(
        name for name in in_sdist if name.startswith(("tests/", "example_project/"))
    )
    if test_files:
        problems.append(f"the sdist carries part of the test suite: {test_files[:5]}")
    for needed in ("LICENSE", "README.md", "CHANGELOG.md", "pyproject.toml"):
        if needed not in in_sdist:
            problems.append(f"the sdist lacks {needed}")

    with zipfile.ZipFile(wheel) as archive:
        in_wheel = set(archive.namelist())
        (metadata_name,) = [n for n in in_wheel if n.endswith(".dist-info/METADATA")]
        metadata = Parser().parsestr(archive.read(metadata_name).decode())
    package_in_sdist = {n for n in in_sdist if n.startswith("usergroups/")}
    missing = sorted(package_in_sdist - in_wheel)
    if missing:
        problems.append(f"files of the package missing from the wheel: {missing}")
    strays = sorted(
        n for n in in_wheel if not n.startswith(("usergroups/", metadata_name.split("/")[0]))
    )
    if strays:
        problems.append(f"the wheel holds files outside usergroups/: {strays}")
    if not any(n.endswith(".dist-info/licenses/LICENSE") for n in in_wheel):
        problems.append("the wheel lacks its LICENSE")

    version = _package_version()
    if metadata["Version"] != version:
        problems.append(f"metadata version {metadata['Version']} is not __version__ {version}")
    if metadata["License-Expression"] != "MIT":
        problems.append(f"License-Expression is {metadata['License-Expression']!r}, not MIT")
    urls = dict(url.split(", ", 1) for url in metadata.get_all("Project-URL") or [])
    for label in ("Homepage", "Documentation", "Repository", "Issues", "Changelog"):
        if not urls.get(label, "").startswith("https://"):
            problems.append(f"no {label} project URL")

    for problem in problems:
        print(f"FAIL: {problem}")
    if not problems:
        print(
            f"{sdist.name}: {len(in_sdist)} entries, no tests; {wheel.name}: "
            f"{len(package_in_sdist)} package files, LICENSE; version {version}, MIT, "
            f"{len(urls)} project URLs"
        )
    return 1 if problems else 0


def _package_version() -> str:
    tree = ast.parse((ROOT / "usergroups" / "__init__.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "__version__":
            return node.value.value
    raise SystemExit("usergroups/__init__.py states no __version__")


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1] if len(sys.argv) > 1 else "dist")))
