"""A client generated from the served schema by openapi-python-client works, and stays small.

The schema's components are what a generator turns into classes: one ``Error`` for every
failure, one ``UserGroup``... (issue 23 counted 390 classes when every operation and status
had its own inline copy). The generator runs offline: it reads the schema file and writes
Python; its formatting hooks (ruff) are left out, they change no behaviour.
"""

import importlib
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest
import yaml

from tests.support.deployment import migrated_site
from tests.support.gunicorn import Gunicorn

pytestmark = pytest.mark.live

PACKAGE = "usergroups_test_client"
# 0.3 adds end users, the audit trail (its answer, an event, its actor) and webhooks.
MAX_MODELS = 56


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("client")
    env, key = migrated_site(f"sqlite:///{tmp / 'db.sqlite3'}", "client")
    with Gunicorn(env, tmp / "gunicorn.log", 1) as server:
        server.key = key
        yield server


@pytest.fixture(scope="module")
def generated(site, tmp_path_factory):
    """The client package generated from the schema the server serves; the generator's
    output (which lists every schema it could not turn into a class)."""
    tmp = tmp_path_factory.mktemp("generated")
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(f"{site.base_url}/api/schema/") as answer:
        (tmp / "schema.yaml").write_bytes(answer.read())
    (tmp / "config.yaml").write_text(f"package_name_override: {PACKAGE}\npost_hooks: []\n")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "openapi_python_client",
            "generate",
            "--path",
            "schema.yaml",
            "--config",
            "config.yaml",
            "--output-path",
            "client",
        ],
        cwd=tmp,
        capture_output=True,
        text=True,
        timeout=120,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    sys.path.insert(0, str(tmp / "client"))
    try:
        yield tmp / "client" / PACKAGE, output
    finally:
        sys.path.remove(str(tmp / "client"))
        for name in [name for name in sys.modules if name.split(".")[0] == PACKAGE]:
            del sys.modules[name]


def test_every_schema_becomes_a_class(generated):
    _package, output = generated
    assert "Warning" not in output and "Unable to" not in output, output


def test_the_model_count_stays_small(generated):
    package, _output = generated
    models = [path for path in (package / "models").glob("*.py") if path.name != "__init__.py"]
    assert 15 <= len(models) <= MAX_MODELS, sorted(path.stem for path in models)
    names = {path.stem for path in models}
    assert {"error", "user_group", "get_or_create_answer", "mint_answer"} <= names
    # No class per operation and status, as inline schemas made (MintEmbedTokenResponse401).
    assert not [name for name in names if name.endswith(("_response_400", "_response_401"))]


def module(name: str):
    return importlib.import_module(f"{PACKAGE}.{name}")


def test_the_operations_work_through_the_client(site, generated):
    client_module = module("client")
    models = module("models")
    client = client_module.AuthenticatedClient(
        base_url=site.base_url, token=site.key, prefix="Token"
    )

    get_or_create = module("api.user.get_or_create_user_group")
    made = get_or_create.sync(
        client=client,
        body=models.GetOrCreateRequest(user_group_id="acme", name="Acme"),
    )
    assert isinstance(made, models.GetOrCreateAnswer), made
    assert made.success == 1 and made.new_user_group is True
    assert made.user_group.provided_id == "acme" and made.user_group.name == "Acme"
    token = made.user_group.token

    again = get_or_create.sync(client=client, body=models.GetOrCreateRequest(user_group_id="acme"))
    assert again.new_user_group is False and again.user_group.token == token

    rotated = module("api.user.rotate_user_group_token").sync(
        client=client, body=models.RotateRequest(current_token=token)
    )
    assert isinstance(rotated, models.RotateAnswer), rotated
    assert rotated.user_group.token != token and rotated.user_group.provided_id == "acme"

    stale = module("api.user.rotate_user_group_token").sync(
        client=client, body=models.RotateRequest(current_token=token)
    )
    assert isinstance(stale, models.Error) and stale.error.code == models.ErrorCode.NOT_FOUND

    listed = module("api.user.list_user_groups").sync(client=client, page_size=10)
    assert isinstance(listed, models.ListAnswer), listed
    assert listed.total_count == 1 and [g.provided_id for g in listed.user_groups] == ["acme"]

    minted = module("api.user.mint_embed_token").sync(
        client=client,
        body=models.MintRequest(
            user_group_id="acme", resource="sales", origin="https://shop.example", expires_in=60
        ),
    )
    assert isinstance(minted, models.MintAnswer), minted
    assert minted.expires_in == 60 and minted.user_group.provided_id == "acme"
    assert minted.embed_token.count(".") == 2  # a compact JWS

    unknown = module("api.user.mint_embed_token").sync(
        client=client, body=models.MintRequest(user_group_id="nobody")
    )
    assert isinstance(unknown, models.Error) and unknown.error.code == models.ErrorCode.NOT_FOUND


@pytest.mark.parametrize(
    ("operation", "body"),
    [("revoke_embed_tokens", "RevokeRequest"), ("delete_user_group", "DeleteRequest")],
)
def test_bodies_with_rules_across_fields_are_classes_too(generated, operation, body):
    """A body whose schema says "exactly one of" is a class of the client, not ``Any``
    (the rule sits under ``allOf``, where the generator lets it be)."""
    package, _output = generated
    source = (package / "api" / "user" / f"{operation}.py").read_text()
    assert f"body: {body}," in source and "body: Any" not in source


def test_revocation_works_through_the_typed_client(site, generated):
    models = module("models")
    client = module("client").AuthenticatedClient(
        base_url=site.base_url, token=site.key, prefix="Token"
    )
    made = module("api.user.get_or_create_user_group").sync(
        client=client, body=models.GetOrCreateRequest(user_group_id="revoked-acme")
    )
    assert isinstance(made, models.GetOrCreateAnswer), made
    revoke = module("api.user.revoke_embed_tokens")
    revoked = revoke.sync(
        client=client, body=models.RevokeRequest(user_group_id="revoked-acme", subtree=True)
    )
    assert isinstance(revoked, models.RevokeAnswer), revoked
    assert revoked.revoked == models.RevokedEnum.USER_GROUP
    both = revoke.sync(client=client, body=models.RevokeRequest(all_=True, end_user_id="ann"))
    assert isinstance(both, models.Error) and both.error.code == models.ErrorCode.INVALID


def test_the_package_is_named_after_the_schemas_title(generated):
    """Without an override, openapi-python-client names the package after ``info.title``
    (an empty title made it ``-client``): the example project and docs/install.md set one."""
    package, _output = generated
    title = yaml.safe_load((Path(package).parent.parent / "schema.yaml").read_text())["info"]
    assert title["title"] == "User group service"


def test_the_schema_file_is_yaml_of_openapi_3_1(generated):
    package, _output = generated
    text = (Path(package).parent.parent / "schema.yaml").read_text()
    assert text.startswith("openapi: 3.1.0")
