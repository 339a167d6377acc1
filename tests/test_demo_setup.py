"""``manage.py demo_setup`` (example project, for ``make demo``): idempotent demo key."""

import io
import json
import os
import re
import shlex
import stat
import subprocess
import sys

import pytest
from django.core.management import call_command
from rest_framework.test import APIClient

from example_project.dashboards.demo import DEMO_PEOPLE
from tests.support import ROOT
from usergroups.models import APIKey, EndUser, Workspace
from usergroups.services.keys import find_api_key, issue_key, revoke_key

pytestmark = pytest.mark.django_db


def demo_setup(key_file) -> str:
    out = io.StringIO()
    call_command("demo_setup", key_file=key_file, stdout=out)
    return out.getvalue()


def test_first_run_creates_workspace_and_key_file(tmp_path):
    key_file = tmp_path / ".demo-api-key"
    output = demo_setup(key_file)
    key = key_file.read_text().strip()
    row = find_api_key(key)
    assert row is not None and row.workspace.slug == "demo"
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    assert key in output
    assert "curl" in output and "current_token" in output


def test_second_run_reuses_the_key(tmp_path):
    key_file = tmp_path / ".demo-api-key"
    demo_setup(key_file)
    key = key_file.read_text().strip()
    output = demo_setup(key_file)
    assert key_file.read_text().strip() == key
    assert "Reusing" in output
    assert Workspace.objects.filter(slug="demo").count() == 1
    assert APIKey.objects.count() == 1


@pytest.mark.parametrize("spoil", ["revoke", "garbage", "other_workspace"])
def test_a_key_that_no_longer_works_is_replaced(tmp_path, spoil):
    key_file = tmp_path / ".demo-api-key"
    if spoil == "garbage":
        key_file.write_text("not a key\n")
    elif spoil == "other_workspace":
        other = issue_key(APIKey(workspace=Workspace.objects.create(slug="elsewhere")))
        key_file.write_text(other + "\n")
    else:
        demo_setup(key_file)
        revoke_key(find_api_key(key_file.read_text().strip()))
    old = key_file.read_text().strip()
    output = demo_setup(key_file)
    new = key_file.read_text().strip()
    assert new != old and "Issued a new demo API key" in output
    row = find_api_key(new)
    assert row.workspace.slug == "demo" and not row.is_revoked


def printed_get_or_creates(output: str) -> list[dict]:
    """The input of each get-or-create curl the setup printed: a JSON body (``-d``) or
    query fields (``-G --data-urlencode``, with ``mapping``/``properties`` as JSON)."""
    requests = []
    for line in output.splitlines():
        args = shlex.split(line) if line.startswith("curl ") else []
        if "POST" in args or not ("-G" in args or "GET" in args):
            continue
        values = [args[i + 1] for i, arg in enumerate(args) if arg in {"-d", "--data-urlencode"}]
        if "-G" in args:
            fields = dict(value.split("=", 1) for value in values)
            for name in ("mapping", "properties"):
                if name in fields:
                    fields[name] = json.loads(fields[name])
            requests.append(fields)
        else:
            requests.append(json.loads(values[0]))
    return requests


def test_every_group_the_printed_curls_create_shows_on_the_demo_dashboard(tmp_path):
    """The printed examples create groups the demo's dashboard can show: a mapping to
    one of its data sources and the ``regions`` its query filters on (else 422)."""
    key_file = tmp_path / ".demo-api-key"
    created = [body for body in printed_get_or_creates(demo_setup(key_file)) if "name" in body]
    assert {body["user_group_id"] for body in created} == {"acme", "globex"}
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {key_file.read_text().strip()}")
    for body in created:
        answer = api.generic("GET", "/api/user", json.dumps(body), content_type="application/json")
        assert answer.status_code == 200, answer.content
        token = answer.json()["user_group"]["token"]
        data = APIClient().get("/embed/api/sales/", HTTP_AUTHORIZATION=f"GroupToken {token}")
        assert data.status_code == 200, (body["user_group_id"], data.content)
        assert data.json()["rows"], body["user_group_id"]


def printed_line(output: str, start: str) -> list[str]:
    line = next(line for line in output.splitlines() if line.startswith(start))
    return shlex.split(line)


def test_the_printed_embed_token_mint_and_its_use_work(tmp_path):
    """``make demo`` shows the release's headline: a mint, the token used as the
    dashboard uses it (its Origin header included), and the JWK Set."""
    key_file = tmp_path / ".demo-api-key"
    output = demo_setup(key_file)
    mint = printed_line(output, "EMBED_TOKEN=$(curl ")
    body = json.loads(mint[mint.index("-d") + 1])
    assert mint[mint.index("-X") + 2] == "http://127.0.0.1:8000/api/user/embed-token"
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {key_file.read_text().strip()}")
    minted = api.post("/api/user/embed-token", body, format="json")
    assert minted.status_code == 200, minted.content
    use = printed_line(output, "curl -sS -w '\\n' http://127.0.0.1:8000/embed/api/sales/")
    origin = next(arg for arg in use if arg.startswith("Origin: ")).split(" ", 1)[1]
    data = APIClient().get(
        "/embed/api/sales/",
        HTTP_AUTHORIZATION=f"Embed {minted.json()['embed_token']}",
        HTTP_ORIGIN=origin,
    )
    assert data.status_code == 200 and data.json()["rows"], data.content
    jwks = printed_line(output, "curl -sS -w '\\n' http://127.0.0.1:8000/api/user/embed-token/jwks")
    assert APIClient().get(jwks[-1].removeprefix("http://127.0.0.1:8000")).json()["keys"]


def test_the_printed_person_mint_and_sign_out_everywhere_work(tmp_path):
    """The person flow's API calls as printed: a mint naming Anna, whose territory
    narrows the rows, then the revocation of her tokens, after which hers are refused."""
    key_file = tmp_path / ".demo-api-key"
    output = demo_setup(key_file)
    mint = printed_line(output, "PERSON_TOKEN=$(curl ")
    body = json.loads(mint[mint.index("-d") + 1])
    assert body["end_user"]["id"] == "anna.schmidt"
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {key_file.read_text().strip()}")
    minted = api.post("/api/user/embed-token", body, format="json")
    assert minted.status_code == 200, minted.content
    embed = {"HTTP_AUTHORIZATION": f"Embed {minted.json()['embed_token']}"}
    data = APIClient().get("/embed/api/sales/", HTTP_ORIGIN="http://127.0.0.1:8000", **embed)
    assert data.status_code == 200, data.content
    assert {row["region"] for row in data.json()["rows"]} == {"DE"}
    assert data.json()["variable_sources"]["territory"] == "end_user"
    revoke = printed_line(
        output, "curl -sS -w '\\n' -X POST http://127.0.0.1:8000/api/user/embed-token/revoke"
    )
    answer = api.post(
        "/api/user/embed-token/revoke", json.loads(revoke[revoke.index("-d") + 1]), format="json"
    )
    assert answer.status_code == 200 and answer.json()["revoked"] == "end_user", answer.content
    again = APIClient().get("/embed/api/sales/", HTTP_ORIGIN="http://127.0.0.1:8000", **embed)
    assert again.status_code == 401


def test_the_demo_people_are_seeded_once(tmp_path):
    output = demo_setup(tmp_path / ".demo-api-key")
    assert f"({len(DEMO_PEOPLE)} new)" in output and "anna.schmidt" in output
    assert "(0 new)" in demo_setup(tmp_path / ".demo-api-key").split("Demo people")[1]
    workspace = Workspace.objects.get(slug="demo")
    seeded = EndUser.objects.filter(workspace=workspace).order_by("end_user_id")
    assert list(seeded.values_list("end_user_id", "display_name")) == sorted(
        (person["end_user_id"], person["display_name"]) for person in DEMO_PEOPLE
    )


def test_the_front_page_leads_to_the_demo(client, tmp_path, settings):
    settings.DASHBOARDS_DEMO_SITE = True  # as under make demo (DEBUG)
    demo_setup(tmp_path / ".demo-api-key")
    response = client.get("/")
    assert response.status_code == 302 and response["Location"] == "/demo/"
    assert client.get("/", follow=True).status_code == 200


def test_make_demo_prints_an_issued_key_once(tmp_path):
    """The Makefile's demo-setup as it runs it: the command reports the new key; the
    app's own log line ("Issued API key ...") would say it a second time."""
    recipe = (ROOT / "Makefile").read_text().split("\ndemo-setup:")[1].split("\n\n")[0]
    line = next(line for line in recipe.splitlines() if "demo_setup" in line).strip()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "USERGROUPS_"))}
    env["DATABASE_URL"] = f"sqlite:///{tmp_path / 'demo.sqlite3'}"
    for word in shlex.split(line):
        if re.fullmatch(r"[A-Z_]+=\S*", word):
            env.update([word.split("=", 1)])
    run = ["manage.py", "migrate", "--noinput", "-v0"]
    subprocess.run([sys.executable, *run], cwd=ROOT, env=env, check=True, timeout=120)
    done = subprocess.run(
        [sys.executable, "manage.py", "demo_setup", "--key-file", str(tmp_path / "key")],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    prefix = (tmp_path / "key").read_text()[:12]
    said = [line for line in (done.stdout + done.stderr).splitlines() if f"{prefix}…" in line]
    assert len(said) == 1, said
