"""The built wheel in a new Django site, set up by following the install instructions.

    python .ci/wheel_smoke.py dist/django_usergroups-*.whl [--python python3.13]
        [--doc docs/install.md] [--section TITLE ...]

In a temporary folder: a fresh venv, ``django-admin startproject mysite .``, then the
section's code blocks in order, as written:

- ``sh`` blocks run line by line in the site with the venv first on PATH. In a
  ``pip install`` line, the package (``/path/to/django-usergroups`` or
  ``django-usergroups``, extras kept) is the wheel under test: nothing is fetched by name.
- ``python`` blocks are split at ``# settings.py`` / ``# urls.py`` / ``# views.py``
  lines and applied to the site's file (a module the site lacks, such as ``views.py``,
  is created): a list the file already has (``INSTALLED_APPS = [# ..., "x"]``) gets the
  new items, imports go after the file's imports, anything else is appended.

Then ``manage.py check --fail-level WARNING`` must pass (the page says nothing else is
required), ``manage.py runserver`` serves on a free loopback port, and each operation of
``/api/user`` is called once with the key the page's ``create_api_key`` printed: get-or-
create (new, then existing), rotate, PUT, list, DELETE, each answer checked.

By default: the install page's sections "Install", "Settings and URLs" and "Migrate and
create a key", then the host views page's "The minimal view" and "With
`IsAuthenticated`", in order, with DRF's default settings (the site's own
``EXCEPTION_HANDLER``: DRF's). The host views are then called with embed tokens: a valid
one passes ``HasEmbedToken`` and ``IsAuthenticated``; an expired, a forged, a revoked
token, another origin and another resource are refused in the contract's failure shape
with their codes, 401s with ``WWW-Authenticate: Embed error="<code>"``. Point it at
another page with --doc and --section (repeatable; the whole file if none).
"""

import argparse
import ast
import json
import os
import re
import shlex
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = re.compile(r"^(?:/path/to/django-usergroups|django-usergroups)(\[[^\]]*\])?$")
KEY = re.compile(r"^ugk_[A-Za-z0-9_-]{43}$")
TOKEN = re.compile(r"^ugt_[A-Za-z0-9_-]{43}$")
ISSUES = re.compile(r"System check identified (some|\d+) issue")


class SmokeFailed(Exception):
    pass


def check(condition: bool, what: str) -> None:
    if not condition:
        raise SmokeFailed(what)
    print(f"  ok: {what}")


# --- Reading the page ---------------------------------------------------------------------


def section_text(doc: Path, title: str | None) -> str:
    text = doc.read_text()
    if not title:
        return text
    lines = text.splitlines()
    for start, line in enumerate(lines):
        heading = re.match(r"^(#+)\s+(.*?)\s*$", line)
        if heading and heading[2] == title:
            level = len(heading[1])
            end = next(
                (
                    i
                    for i in range(start + 1, len(lines))
                    if (m := re.match(r"^(#+)\s", lines[i]))
                    and len(m[1]) <= level
                    and not in_fence(lines, i)
                ),
                len(lines),
            )
            return "\n".join(lines[start:end])
    raise SmokeFailed(f"no heading {title!r} in {doc}")


def in_fence(lines: list[str], index: int) -> bool:
    return sum(line.startswith("```") for line in lines[:index]) % 2 == 1


def code_blocks(text: str) -> list[tuple[str, str]]:
    """(language, body) of each fenced block, in order."""
    return [(m[1], m[2]) for m in re.finditer(r"^```(\w*)\n(.*?)^```", text, re.M | re.S)]


def shell_lines(lang: str, body: str) -> list[str]:
    """Logical command lines: continuations joined, comments and blanks dropped. In a
    ``console`` block only ``$ `` lines (and their continuations) are commands."""
    commands, pending = [], ""
    for line in body.splitlines():
        if lang == "console" and not pending:
            if not line.startswith("$ "):
                continue
            line = line[2:]
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        line = pending + line
        pending = ""
        if line.strip() and not line.lstrip().startswith("#"):
            commands.append(line.strip())
    return commands


def python_files(body: str) -> list[tuple[str, str]]:
    """(file name, snippet) for each ``# name.py`` part of a python block."""
    parts, name, lines = [], None, []
    for line in body.splitlines():
        header = re.match(r"^#\s*(\S+\.py)\s*$", line)
        if header:
            if name:
                parts.append((name, "\n".join(lines)))
            name, lines = header[1], []
        else:
            lines.append(line)
    if name:
        parts.append((name, "\n".join(lines)))
    elif body.strip():
        raise SmokeFailed(f"a python block names no file (# settings.py):\n{body}")
    return parts


# --- Applying it to the site ------------------------------------------------------------


def apply_snippet(path: Path, snippet: str) -> None:
    for node in ast.parse(snippet).body:
        source = ast.get_source_segment(snippet, node)
        text = path.read_text()
        tree = ast.parse(text)
        lines = text.splitlines(keepends=True)
        if isinstance(node, ast.Import | ast.ImportFrom):
            last_import = max(
                (n.end_lineno for n in tree.body if isinstance(n, ast.Import | ast.ImportFrom)),
                default=0,
            )
            lines.insert(last_import, source + "\n")
        elif (existing := _existing_list(tree, node)) is not None:
            items = [ast.get_source_segment(snippet, item) for item in node.value.elts]
            closing = existing.end_lineno - 1  # the line holding "]"
            lines[closing:closing] = [f"    {item},\n" for item in items]
        else:
            lines.append("\n" + source + "\n")
        path.write_text("".join(lines))


def _existing_list(tree: ast.Module, node: ast.stmt) -> ast.List | None:
    if not (
        isinstance(node, ast.Assign)
        and isinstance(node.value, ast.List)
        and len(node.targets) == 1
        and isinstance(node.targets[0], ast.Name)
    ):
        return None
    for statement in tree.body:
        if (
            isinstance(statement, ast.Assign)
            and isinstance(statement.value, ast.List)
            and any(
                isinstance(t, ast.Name) and t.id == node.targets[0].id for t in statement.targets
            )
        ):
            return statement.value
    return None


def pip_line(command: str, wheel: Path) -> str:
    words = shlex.split(command, comments=True)
    swapped = []
    for word in words:
        match = PACKAGE.match(word)
        swapped.append(f"django-usergroups{match[1] or ''} @ {wheel.as_uri()}" if match else word)
    return shlex.join(swapped)


class Site:
    def __init__(self, folder: Path, python: str) -> None:
        self.folder = folder
        self.venv = folder / "venv"
        self.dir = folder / "site"
        run([python, "-m", "venv", str(self.venv)])
        self.env = {
            **{k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "PYTHON"))},
            "VIRTUAL_ENV": str(self.venv),
            "PATH": f"{self.venv / 'bin'}{os.pathsep}{os.environ['PATH']}",
            "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        }
        self.env.pop("DATABASE_URL", None)

    def sh(self, command: str) -> subprocess.CompletedProcess:
        print(f"$ {command}", flush=True)
        done = subprocess.run(
            ["bash", "-c", command],
            cwd=self.dir,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        if done.returncode != 0:
            raise SmokeFailed(f"{command!r} exited {done.returncode}:\n{done.stdout}{done.stderr}")
        return done


def run(command: list[str]) -> None:
    subprocess.run(command, check=True, timeout=300)


# --- Calling the API --------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def fetch(url: str, method: str = "GET", body=None, **headers: str):
    """(status, JSON body, headers) of one request, through no proxy."""
    request = urllib.request.Request(
        url,
        data=None if body is None else json.dumps(body).encode(),
        method=method,
        headers={"Content-Type": "application/json", **headers},
    )
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(request, timeout=15) as response:
            return response.status, json.load(response), response.headers
    except urllib.error.HTTPError as error:
        return error.code, json.load(error), error.headers


def call(base: str, key: str, method: str, path: str = "/api/user", body=None):
    status, answer, _ = fetch(base + path, method, body, Authorization=f"Token {key}")
    return status, answer


def exercise(base: str, key: str) -> None:
    status, body = call(base, key, "GET", body={"user_group_id": "smoke", "mapping": {"s": "d"}})
    group = body.get("user_group", {})
    check(status == 200 and body.get("new_user_group") is True, "get-or-create: 200, new group")
    check(bool(TOKEN.match(group.get("token", ""))), "get-or-create: a ugt_ token")
    first = group["token"]
    status, body = call(base, key, "GET", body={"user_group_id": "smoke"})
    check(
        status == 200 and body["new_user_group"] is False and body["user_group"]["token"] == first,
        "get-or-create again: 200, same group, same token",
    )
    status, body = call(base, key, "POST", body={"current_token": first})
    rotated = body.get("user_group", {}).get("token", "")
    check(status == 200 and TOKEN.match(rotated) and rotated != first, "rotate: 200, new token")
    status, _ = call(base, key, "POST", body={"current_token": first})
    check(status == 404, "rotate the old token again: 404")
    status, body = call(base, key, "PUT", body={"user_group_id": "smoke", "name": "Smoke Ltd"})
    check(
        status == 200
        and body["user_group"]["name"] == "Smoke Ltd"
        and body["user_group"]["token"] == rotated,
        "PUT: 200, renamed, token unchanged",
    )
    status, body = call(base, key, "GET", "/api/user/list")
    listed = body.get("user_groups", [])
    check(
        status == 200
        and body["total_count"] == 1
        and [g["name"] for g in listed] == ["Smoke Ltd"]
        and "token" not in listed[0],
        "list: 200, the one group, no token",
    )
    status, body = call(base, key, "DELETE", body={"user_group_id": "smoke"})
    check(status == 200 and body["user_group"]["provided_id"] == "smoke", "DELETE: 200")
    status, body = call(base, key, "GET", "/api/user/list")
    check(status == 200 and body["total_count"] == 0, "list after DELETE: empty")
    status, body = call(base, "ugk_" + "x" * 43, "GET", body={"user_group_id": "smoke"})
    check(status == 401 and body["success"] == 0, "an unknown key: 401")


ORIGIN = "https://app.example.com"


def refusal(status: int, body, headers, expected_status: int, code: str, what: str) -> None:
    """The contract's failure body with ``code``, and on a 401 its Embed challenge."""
    error = body.get("error") if isinstance(body, dict) else None
    check(
        status == expected_status
        and set(body) == {"success", "error"}
        and body["success"] == 0
        and isinstance(error, dict)
        and set(error) == {"code", "message"}
        and error["code"] == code
        and bool(error["message"]),
        f"{what}: {expected_status} {code}, in the contract's failure shape",
    )
    if expected_status == 401:
        challenge = headers.get("WWW-Authenticate")
        check(challenge == f'Embed error="{code}"', f"{what}: WWW-Authenticate: {challenge}")


def exercise_host_views(base: str, key: str) -> None:
    """The host views of the host views page, under DRF's default exception handler."""
    status, body = call(base, key, "GET", body={"user_group_id": "embed-smoke"})
    check(status == 200, "a group for the embed tokens")
    team_id = body["user_group"]["team_id"]

    def mint(**fields) -> str:
        status, body = call(
            base, key, "POST", "/api/user/embed-token", {"user_group_id": "embed-smoke", **fields}
        )
        check(status == 200 and body["embed_token"].startswith("eyJ"), f"mint {fields}")
        return body["embed_token"]

    def host(path: str, token: str, **headers: str):
        return fetch(base + path, Authorization=f"Embed {token}", **headers)

    minted_at = time.monotonic()
    short = mint(origin=ORIGIN, expires_in=30)
    token = mint(origin=ORIGIN, resource="sales")
    status, body, _ = host("/embed/api/sales/", token, Origin=ORIGIN)
    check(status == 200 and body["group"] == "embed-smoke", "the minimal view: 200")
    status, body, _ = host("/embed/api/whoami/", token, Origin=ORIGIN)
    check(
        status == 200 and body == {"user": f"usergroup:{team_id}", "user_group_id": "embed-smoke"},
        "IsAuthenticated lets a valid embed token in; request.user is the group",
    )
    refusal(
        *host("/embed/api/sales/", token, Origin="https://evil.example"),
        403,
        "origin_not_allowed",
        "another origin",
    )
    refusal(
        *host("/embed/api/sales/", mint(resource="orders")),
        403,
        "permission_denied",
        "another resource",
    )
    head, payload, _ = token.split(".")
    forged = f"{head}.{payload}.{'A' * 86}"
    for path in ("/embed/api/sales/", "/embed/api/whoami/"):
        refusal(*host(path, forged), 401, "authentication_failed", f"a forged token at {path}")
    time.sleep(max(0.0, minted_at + 31 - time.monotonic()))
    refusal(*host("/embed/api/sales/", short), 401, "token_expired", "an expired token")
    status, _ = call(
        base, key, "POST", "/api/user/embed-token/revoke", {"user_group_id": "embed-smoke"}
    )
    check(status == 200, "revoke the group's embed tokens")
    refusal(*host("/embed/api/whoami/", token), 401, "authentication_failed", "a revoked token")


def serve_and_exercise(site: Site, key: str, host_views: bool) -> None:
    port = free_port()
    log = open(site.folder / "runserver.log", "w+")
    server = subprocess.Popen(
        ["python", "manage.py", "runserver", f"127.0.0.1:{port}", "--noreload"],
        cwd=site.dir,
        env=site.env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    log.seek(0)
                    raise SmokeFailed(f"runserver did not start:\n{log.read()[-3000:]}") from None
                time.sleep(0.3)
        print(f"runserver on {base}")
        exercise(base, key)
        if host_views:
            exercise_host_views(base, key)
    finally:
        server.terminate()
        server.wait(timeout=20)
        log.close()


# --- The run ------------------------------------------------------------------------------


def smoke(wheel: Path, python: str, pages: list[tuple[Path, list[str]]], folder: Path) -> None:
    blocks = []
    for doc, titles in pages:
        text = "\n".join(section_text(doc, title) for title in titles or [None])
        found = [(lang, body) for lang, body in code_blocks(text) if lang in SHELLS | {"python"}]
        where = " + ".join(titles) or "(whole file)"
        check(bool(found), f"{doc.name} § {where}: {len(found)} code blocks")
        blocks += found
    site = Site(folder, python)
    site.dir.mkdir()
    key = None
    for lang, body in blocks:
        if lang != "python":
            for command in shell_lines(lang, body):
                if re.match(r"^(python -m )?pip install\b", command):
                    command = pip_line(command, wheel)
                done = site.sh(command)
                if "create_api_key" in command:
                    key = done.stdout
                if ISSUES.search(done.stderr + done.stdout):
                    raise SmokeFailed(f"{command!r} reported system check issues:\n{done.stderr}")
            if not (site.dir / "manage.py").exists() and "pip install" in body:
                # The page installs into an existing site: the site is made once Django is in.
                site.sh("django-admin startproject mysite .")
        else:
            for name, snippet in python_files(body):
                target = site.dir / "mysite" / name
                if name in {"settings.py", "urls.py"}:
                    check(target.exists(), f"the page's {name} is the site's mysite/{name}")
                target.touch()
                apply_snippet(target, snippet)
    check(key is not None, "the page creates an API key with create_api_key")
    check(
        bool(KEY.match(key.rstrip("\n"))) and key.count("\n") == 1,
        "create_api_key printed the key alone on stdout",
    )
    site.sh("python manage.py check --fail-level WARNING")
    versions = site.sh(
        "python -c 'import sys, django, rest_framework, usergroups; print(sys.version.split()[0],"
        " django.get_version(), rest_framework.VERSION, usergroups.__version__)'"
    ).stdout.split()
    print("Python {} Django {} DRF {} django-usergroups {}".format(*versions))
    host_views = any(doc.name == HOST_VIEWS.name for doc, _ in pages)
    if host_views:
        handler = site.sh(
            "python manage.py shell -c 'from rest_framework.settings import api_settings;"
            " handler = api_settings.EXCEPTION_HANDLER;"
            ' print(handler.__module__ + "." + handler.__name__)\''
        ).stdout.split()[-1]  # after Django 5.2's note on the shell's automatic imports
        check(handler == "rest_framework.views.exception_handler", f"DRF's own handler: {handler}")
    serve_and_exercise(site, key.strip(), host_views)


SHELLS = {"sh", "bash", "shell", "console"}
INSTALL = ROOT / "docs" / "install.md"
HOST_VIEWS = ROOT / "docs" / "host-views.md"
DEFAULT_PAGES = [
    (INSTALL, ["Install", "Settings and URLs", "Migrate and create a key"]),
    (HOST_VIEWS, ["The minimal view", "With `IsAuthenticated`"]),
]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("wheel", type=Path)
    parser.add_argument("--python", default=sys.executable, help="the new venv's interpreter")
    parser.add_argument("--doc", type=Path, help="one page instead of the default ones")
    parser.add_argument("--section", action="append", dest="sections", help="a heading")
    parser.add_argument("--keep", action="store_true", help="keep the temporary site")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="usergroups-wheel-smoke-"))
    print(f"site in {folder}")
    try:
        pages = DEFAULT_PAGES
        if args.doc is not None or args.sections is not None:
            pages = [(args.doc or INSTALL, args.sections or [])]
        smoke(args.wheel.resolve(), args.python, pages, folder)
    except SmokeFailed as failure:
        print(f"WHEEL SMOKE FAILED: {failure}", file=sys.stderr)
        return 1
    finally:
        if not args.keep:
            subprocess.run(["rm", "-rf", str(folder)], check=False)
    print("wheel smoke: passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
