"""Fuzzing the live API with schemathesis: no input gets a 5xx, every answer fits the schema.

A real gunicorn (2 workers) serves ``example_project`` on a fresh SQLite file; schemathesis
loads the OpenAPI schema the server publishes at ``/api/schema/`` and generates requests
for every operation in it, valid (positive) and schema-breaking (negative), with a valid
API key and with bad ones. Every response goes through schemathesis' conformance checks.

Schemathesis sends the GET body (the schema gives get-or-create a ``requestBody`` by
design); :func:`test_valid_key` proves the server read them (the groups they named answered).

:func:`test_schemathesis_run_with_its_stateful_phase` runs schemathesis' own command line,
every phase (stateful included, following the schema's OpenAPI links), with every check:
no failure and no warning (a warning fails the run).

gunicorn runs with ``--limit-request-line 0``: by default it answers a request line over
4094 bytes itself, with an HTML 414, before the app sees it. That limit belongs to the
front end (gunicorn, nginx), not to the app's contract, which is what is fuzzed here.
"""

import collections
import json
import os
import random
import re

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from tests.support.deployment import manage, server_env
from tests.support.gunicorn import Gunicorn
from tests.support.http import call_api
from tests.support.leaks import SECRET_SHAPE
from tests.support.schemathesis_cli import run_schemathesis

pytestmark = [pytest.mark.live, pytest.mark.slow]
# test_totals reads what the fuzz tests counted in this module's globals: one worker runs
# them, in order (pytest-xdist's loadgroup). The command-line run counts nothing here: it
# may run on another worker, beside them.
COUNTED = pytest.mark.xdist_group("fuzz")

CHECKS = [
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
]
MIN_REQUESTS = 1000
VALID_KEY_EXAMPLES = 80  # per operation and generation mode
BAD_KEY_EXAMPLES = 12  # per operation and kind of bad key
HTTP_METHODS = {"get", "put", "post", "delete", "options", "head", "patch", "trace"}


def published_operations() -> list[tuple[str, str]]:
    """Every ``(path, METHOD)`` of the OpenAPI schema, generated in-process at collection
    (the tests are parametrized before the server starts). No operation can be left out:
    :func:`test_every_operation_is_fuzzed` checks the server publishes the same list."""
    from drf_spectacular.generators import SchemaGenerator

    paths = SchemaGenerator().get_schema(request=None, public=True)["paths"]
    return sorted(
        (path, method.upper())
        for path, item in paths.items()
        for method in item
        if method in HTTP_METHODS
    )


OPERATIONS = published_operations()


def public_operations() -> set[tuple[str, str]]:
    """The operations anyone may call (``security: [{}]``: the JWK Set): no key there can
    be bad, and, taking no input, they have no request a negative case could break."""
    from drf_spectacular.generators import SchemaGenerator

    paths = SchemaGenerator().get_schema(request=None, public=True)["paths"]
    return {
        (path, method.upper())
        for path, item in paths.items()
        for method, operation in item.items()
        if method in HTTP_METHODS and operation.get("security") == [{}]
    }


PUBLIC = public_operations()
KEYED_OPERATIONS = [operation for operation in OPERATIONS if operation not in PUBLIC]
VALID_KEY_CASES = [
    (path, method, mode)
    for path, method in OPERATIONS
    for mode in ("positive", "negative")
    if not (mode == "negative" and (path, method) in PUBLIC)
]
BAD_KEYS = ["missing", "malformed", "revoked", "expired", "group_token"]
MALFORMED = [
    "Token",
    "Token ",
    "Bearer {key}",
    "Token {key} extra",
    "Token {key}x",
    "Token {key_head}",
    "token  ugk_",
    "Basic dXNlcjpwYXNz",
    "Token ugk_" + "A" * 43,
]

# What the run sent and got, for the totals check at the end of the module.
SENT: collections.Counter = collections.Counter()


def fuzz_settings(max_examples: int):
    return settings(
        max_examples=max_examples,
        deadline=None,
        database=None,  # nothing written to .hypothesis/ in the work tree
        suppress_health_check=list(HealthCheck),
        print_blob=True,
    )


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    """The server, its valid key, and the bad ones (revoked, expired, a group token)."""
    tmp = tmp_path_factory.mktemp("fuzz")
    env = server_env(f"sqlite:///{tmp / 'db.sqlite3'}")
    manage(env, "migrate", "--noinput")

    def new_key(*args: str) -> str:
        return manage(env, "create_api_key", "--workspace", "fuzz", *args).strip()

    keys = {"valid": new_key(), "revoked": new_key(), "expired": new_key("--expires-in-days", "1")}
    manage(env, "revoke_api_key", keys["revoked"])
    manage(
        env,
        "shell",
        "-c",
        "from datetime import timedelta; from django.utils import timezone;"
        "from usergroups.models import APIKey;"
        f"APIKey.objects.filter(prefix='{keys['expired'][:12]}')"
        ".update(expires_at=timezone.now() - timedelta(minutes=1))",
    )
    server = Gunicorn(env, tmp / "gunicorn.log", 2, "--limit-request-line", "0")
    with server:
        server.keys = keys
        # Current tokens and ids of groups, so that rotations, updates and deletes
        # reach existing groups too (random ones are all 404).
        server.tokens, server.ids = [], []
        yield server
    log = server.log()
    # Whatever the answers were, no worker may have logged a server error.
    assert "Traceback" not in log, log[-5000:]
    assert "[ERROR]" not in log and "[CRITICAL]" not in log, log[-5000:]
    assert not SECRET_SHAPE.search(log), "the server logged an API key or a group token"


@pytest.fixture(scope="module")
def schema(live):
    loaded = schemathesis.openapi.from_url(f"{live.base_url}/api/schema/?format=json")
    # A token of a group, used below as an API key; made with the valid key.
    case = loaded["/api/user"]["GET"].Case(body={"user_group_id": "fuzz-token-holder"})
    response = case.call(headers=auth_header(live.keys["valid"]))
    live.keys["group_token"] = response.json()["user_group"]["token"]
    return loaded


def auth_header(key: str) -> dict[str, str]:
    return {"Authorization": f"Token {key}"}


def send(case, live, headers: dict[str, str] | None, kind: str):
    """Send ``case`` with exactly ``headers`` for authorization; run every check."""
    case.headers = {k: v for k, v in (case.headers or {}).items() if k.lower() != "authorization"}
    response = case.call_and_validate(headers=headers, checks=CHECKS)
    if "Authorization" not in response.request.headers:
        kind = "missing"  # a negative case dropped the header (see test_bad_key)
    SENT[(kind, case.operation.label, response.status_code)] += 1
    if case.method == "GET" and response.request.body:  # what went on the wire
        SENT[("get-with-body",)] += 1
    return response


@COUNTED
@pytest.mark.parametrize(("path", "method", "mode"), VALID_KEY_CASES)
def test_valid_key(live, schema, path, method, mode):
    operation = schema[path][method]
    strategy = operation.as_strategy(generation_mode=schemathesis.GenerationMode(mode))

    @fuzz_settings(VALID_KEY_EXAMPLES)
    @given(case=strategy, use_existing=st.booleans())
    def fuzz(case, use_existing):
        if use_existing and isinstance(case.body, dict) and method in ("POST", "PUT", "DELETE"):
            point_at_existing_group(case, live)
        response = send(case, live, auth_header(live.keys["valid"]), "valid")
        if response.status_code == 200 and path == "/api/user" and method != "DELETE":
            group = response.json()["user_group"]
            if "token" in group:
                live.tokens.append(group["token"])
            live.ids.append(group["provided_id"])
            # The group answered is the one the body named: the body was read (without
            # it the id is missing, a 400). Hypothesis repeats simple ids, so the group
            # may already exist: "new" is not required.
            if method == "GET" and isinstance(case.body, dict):
                if group["provided_id"] == case.body.get("user_group_id"):
                    bodies_read.append(group["provided_id"])

    bodies_read: list[str] = []
    fuzz()
    SENT[("tests",)] += 1
    if (path, method, mode) == ("/api/user", "GET", "positive"):
        # Checked here, not in a later test: pytest-xdist need not keep the module's order.
        assert bodies_read, "no GET answered the group its body named"


def point_at_existing_group(case, live) -> None:
    """Make the generated body name a group that exists (its token, or its id)."""
    if case.method == "POST" or (case.method == "DELETE" and "current_token" in case.body):
        if live.tokens:
            token = live.tokens.pop(random.randrange(len(live.tokens)))
            case.body = {**case.body, "current_token": token}
    elif live.ids:
        case.body = {**case.body, "user_group_id": random.choice(live.ids)}


@COUNTED
@pytest.mark.parametrize(("path", "method"), KEYED_OPERATIONS)
@pytest.mark.parametrize("kind", BAD_KEYS)
def test_bad_key(live, schema, path, method, kind):
    """Whatever the request, a bad key is 401 with the contract's error body."""
    operation = schema[path][method]
    keys = live.keys

    @fuzz_settings(BAD_KEY_EXAMPLES)
    @given(
        case=operation.as_strategy(generation_mode=schemathesis.GenerationMode.POSITIVE)
        | operation.as_strategy(generation_mode=schemathesis.GenerationMode.NEGATIVE),
        malformed=st.sampled_from(
            [m.format(key=keys["valid"], key_head=keys["valid"][:20]) for m in MALFORMED]
        )
        | st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=80).map(
            "Token {}".format
        ),
    )
    def fuzz(case, malformed):
        if kind == "missing":
            headers = None
        elif kind == "malformed":
            headers = {"Authorization": malformed}
        else:
            headers = auth_header(keys[kind])
        response = send(case, live, headers, kind)
        assert response.status_code == 401, (headers, response.text)
        # A negative case may drop the header on purpose (the security scheme makes it
        # a required header): then the key is missing, whatever kind this run is.
        sent = "Authorization" in response.request.headers
        expected = "authentication_failed" if sent else "not_authenticated"
        assert response.json()["error"]["code"] == expected, response.text
        assert response.headers.get("www-authenticate") == ["Token"], response.headers

    fuzz()
    SENT[("tests",)] += 1


def test_every_operation_is_fuzzed(schema):
    """The operations fuzzed above are those the running server publishes, all of them."""
    published = {
        (operation.ok().path, operation.ok().method.upper())
        for operation in schema.get_all_operations()
    }
    assert published == set(OPERATIONS)
    assert len(OPERATIONS) >= 5  # get-or-create, rotate, update, delete, list at least


@COUNTED
def test_totals(live, schema):
    """At least MIN_REQUESTS requests, none answered 5xx; the tally is printed (-rP)."""
    ran = sum(n for key, n in SENT.items() if len(key) == 3)
    if ran == 0:
        pytest.skip("the fuzz tests did not run (deselected)")
    by_key, by_operation = collections.Counter(), collections.Counter()
    for (kind, label, status), n in ((k, n) for k, n in SENT.items() if len(k) == 3):
        by_key[f"{kind} {status}"] += n
        by_operation[f"{label} {status}"] += n
    print(f"fuzz requests: {ran} (GET with a body: {SENT[('get-with-body',)]})")
    print("by key:", json.dumps(dict(sorted(by_key.items()))))
    print("by operation:", json.dumps(dict(sorted(by_operation.items()))))
    assert not [key for key in SENT if len(key) == 3 and key[2] >= 500]
    full_run = len(VALID_KEY_CASES) + len(KEYED_OPERATIONS) * len(BAD_KEYS)
    if SENT[("tests",)] < full_run:
        return
    assert ran >= MIN_REQUESTS


#: Examples per operation and phase of the command-line run: about a minute here.
CLI_EXAMPLES = 30
#: A fixed seed keeps CI's run the same each time; USERGROUPS_FUZZ_SEED picks another.
CLI_SEED = 2026
#: The group every valid ``parent_user_group_id`` of the command-line run names.
FUZZ_PARENT = "fuzz-parent"


#: The group valid rotations, updates and mints name (the hooks follow it).
FUZZ_TARGET = "fuzz-target"


def get_or_create(live, provided_id: str) -> dict:
    """The user group ``provided_id`` of the live site, got or created over HTTP."""
    status, body = call_api(
        live.base_url, live.keys["valid"], "GET", {"user_group_id": provided_id}
    )
    assert status == 200, body
    return body["user_group"]


def test_schemathesis_run_with_its_stateful_phase(live, tmp_path):
    """``schemathesis run`` against the served schema: all phases and checks, stateful
    testing through the links from get-or-create. The schema states what the API
    checks, so valid data is accepted (positive_data_acceptance) and invalid refused;
    a warning ("most generated requests are rejected by validation the schema does not
    state", "no links point to this operation"...) fails the run (``fail-on``).
    tests/support/schemathesis_hooks.py says what no schema can state."""
    parent, target = (get_or_create(live, name) for name in (FUZZ_PARENT, FUZZ_TARGET))
    assert parent["provided_id"] == FUZZ_PARENT and target["provided_id"] == FUZZ_TARGET
    config = tmp_path / "schemathesis.toml"
    # Links are the schema's own: inferred ones (dependency analysis pairs every
    # operation that answers an end user with every one that takes end_user_id, or list
    # with delete for webhooks) would ask the stateful phase to cover pairs the schema
    # does not link, and left get-or-create's links unvisited at this seed. The end-user
    # and webhook operations are fuzzed without links.
    # The GETs' query string is not read beside a body, so a bad value there is not
    # refused (the body's answer, 200 too, is the answer): no schema can say it, the
    # repository's schemathesis.toml says it too.
    body_wins = '["2xx", "400", "401", "403", "404", "405", "409", "415", "422", "429", "5xx"]'
    config.write_text(
        "[warnings]\nfail-on = true\n\n[phases.stateful.inference]\nalgorithms = []\n"
        + "".join(
            f'\n[[operations]]\ninclude-operation-id = "{operation}"\n'
            f"checks.negative_data_rejection.expected-statuses = {body_wins}\n"
            for operation in ("get_or_create_user_group", "get_end_user")
        )
    )
    done = run_schemathesis(
        live.base_url,
        live.keys["valid"],
        config,
        "--phases",
        "examples,coverage,fuzzing,stateful",
        "--checks",
        "all",
        "--max-examples",
        str(CLI_EXAMPLES),
        "--workers",
        "1",
        "--seed",
        os.environ.get("USERGROUPS_FUZZ_SEED", str(CLI_SEED)),
        cwd=tmp_path,
        env={
            "SCHEMATHESIS_HOOKS": "tests.support.schemathesis_hooks",
            "USERGROUPS_FUZZ_PARENT": FUZZ_PARENT,
            "USERGROUPS_FUZZ_TARGET": FUZZ_TARGET,
            "USERGROUPS_FUZZ_TARGET_TOKEN": target["token"],
        },
        timeout=480,
    )
    output = done.stdout + done.stderr
    print(output[-3000:])
    assert done.returncode == 0, output[-8000:]
    assert "WARNINGS" not in output and "No issues found" in output, output[-8000:]
    links = re.search(r"API Links:\s+(\d+) covered / (\d+) selected / (\d+) total", output)
    assert links is not None, output[-8000:]
    covered, selected, total = map(int, links.groups())
    assert covered == selected == total >= 4, links.group(0)
