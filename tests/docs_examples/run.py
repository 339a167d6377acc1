"""The run: the example project as ``make demo`` leaves it, under gunicorn, and every
console example of the docs in turn against it. See the package's docstring."""

import argparse
import difflib
import json
import sys
import tempfile
from pathlib import Path

from tests.docs_examples import outputs, pages
from tests.docs_examples.shell import Shell
from tests.support import ROOT
from tests.support.deployment import manage, server_env
from tests.support.gunicorn import Gunicorn

MKDOCS_YML = ROOT / "mkdocs.yml"
# One process, as `make demo`'s runserver: a throttling example counts in its memory.
WORKERS = 1


def demo_env(database_url: str) -> dict[str, str]:
    """The environment ``make demo`` runs the example project in: DJANGO_DEBUG=true and
    so the fixed development secret key; no other DJANGO_* variable."""
    env = server_env(database_url)
    env["DJANGO_DEBUG"] = "true"
    del env["DJANGO_SECRET_KEY"], env["DJANGO_ALLOWED_HOSTS"]  # the example's defaults
    return env


class Site:
    """A fresh SQLite database set up as ``make demo`` does, and the server on it."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.env = demo_env(f"sqlite:///{directory / 'db.sqlite3'}")
        manage(self.env, "migrate", "--noinput")
        key_file = directory / ".demo-api-key"
        manage(self.env, "demo_setup", "--key-file", str(key_file))
        self.api_key = key_file.read_text(encoding="ascii").strip()
        self.server: Gunicorn | None = None
        self.directive: dict | None = None

    def shell_env(self) -> dict[str, str]:
        """The quickstart's shell: the venv activated, DJANGO_DEBUG=true, API_KEY."""
        env = {key: value for key, value in self.env.items() if key != "DJANGO_SETTINGS_MODULE"}
        venv_bin = Path(sys.executable).parent
        env.update(
            PATH=f"{venv_bin}:{env.get('PATH', '/usr/bin:/bin')}",
            VIRTUAL_ENV=sys.prefix,
            API_KEY=self.api_key,
        )
        return env

    def serve(self, directive: dict | None) -> str | None:
        """Serve as ``directive`` says (None: the example project as it is); the new
        base URL if the server was (re)started, else None."""
        if self.server is not None and directive == self.directive:
            return None
        self.stop()
        env = dict(self.env)
        env.update((directive or {}).get("env", {}))
        if directive and "USERGROUPS" in directive:
            env["DJANGO_SETTINGS_MODULE"] = "tests.docs_examples.settings"
            env["DOCS_EXAMPLES_USERGROUPS"] = json.dumps(directive["USERGROUPS"])
        self.server = Gunicorn(env, self.directory / "gunicorn.log", WORKERS).start()
        self.directive = directive
        return self.server.base_url

    def stop(self) -> None:
        if self.server is not None:
            self.server.stop()
            self.server = None


def _report(example: pages.Example, expected: str, problems: list[str]) -> str:
    """Where, what, and a diff of the docs against what they should show instead."""
    first, *more = example.command.split("\n")
    first = first.rstrip(" \\") + (" …" if more else "")
    lines = [f"{example.where}: $ {first}"]
    lines += [f"  {problem}" for problem in problems]
    lines += difflib.unified_diff(
        outputs.plain(example.output).split("\n"), expected.split("\n"), "docs", "run", lineterm=""
    )
    return "\n".join(lines)


def _settle(example: pages.Example, command: str, shown: str, values, mode: str) -> list[str]:
    """Check the example's output against what the run printed (its differences), or
    write the run's output into it: "rewrite" keeps the values the docs show wherever
    the run pairs with them, so that only what changed changes; "fresh" writes the run's
    own values everywhere, commands included."""
    docs_output = outputs.plain(example.output)
    if mode == "fresh":
        values.learn(docs_output, shown)
        example.command_lines = command.split("\n")
        example.output_lines = shown.split("\n") if shown else []
        return []
    found = values.compare(docs_output, shown)
    expected = values.as_docs_would(shown)
    if mode == "check":
        return [_report(example, expected, found)] if found else []
    values.learn(expected, shown)
    example.output_lines = expected.split("\n") if expected else []
    return []


def run(page_paths: list[Path], mode: str = "check", log=sys.stdout) -> list[str]:
    """Run every console example of ``page_paths`` in order; the differences found. In
    the modes "rewrite" and "fresh" (see :func:`_settle`) there are none: the pages now
    show this run's outputs."""
    blocks = {page: pages.console_blocks(page) for page in page_paths}
    values = outputs.Values()
    differences: list[str] = []
    count = changed = 0
    with tempfile.TemporaryDirectory(prefix="docs-examples-") as directory:
        site = Site(Path(directory))
        try:
            with Shell(ROOT, site.shell_env()) as shell:
                for page, page_blocks in blocks.items():
                    for block in page_blocks:
                        base_url = site.serve(block.server)
                        if base_url is not None:
                            shell.run(f"SITE={base_url}; URL=$SITE/api/user")
                        for example in block.examples:
                            count += 1
                            command = values.in_command(example.command)
                            printed = shell.run(command)
                            shown = outputs.as_shown(printed, outputs.shown_headers(example.output))
                            differences += _settle(example, command, shown, values, mode)
                    if mode != "check" and pages.write_back(page, page_blocks):
                        print(f"rewrote {page}", file=log)
                        changed += 1
        finally:
            site.stop()
    for difference in differences:
        print(difference, file=log)
    where = f"{count} commands on {len(blocks)} pages"
    if differences:
        print(f"{len(differences)} of {where} differ from the docs.", file=log)
    else:
        done = "all as documented" if mode == "check" else f"{changed} pages rewritten"
        print(f"{where}: {done}.", file=log)
    return differences


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tests.docs_examples",
        description="Run the docs' console examples against a live example project.",
    )
    parser.add_argument(
        "--rewrite",
        action="store_true",
        help="write this run's outputs into the docs, keeping the tokens, keys and times "
        "the docs show where they pair with the run's",
    )
    parser.add_argument(
        "--fresh",
        action="store_true",
        help="with --rewrite: write the run's own tokens, keys and times everywhere",
    )
    parser.add_argument(
        "pages", nargs="*", type=Path, help="Markdown files (default: the nav of mkdocs.yml)"
    )
    args = parser.parse_args(argv)
    page_paths = [page.resolve() for page in args.pages] or pages.nav_pages(MKDOCS_YML)
    if args.fresh and not args.rewrite:
        parser.error("--fresh goes with --rewrite")
    mode = ("fresh" if args.fresh else "rewrite") if args.rewrite else "check"
    return 1 if run(page_paths, mode) else 0
