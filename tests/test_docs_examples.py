"""The checker of the docs' console examples (tests/docs_examples): how it reads pages,
matches values a run makes anew, and, against a live server, that it fails on a stale
output and that its rewrite gives pages it then passes. ``.ci/run`` runs it on the docs."""

import re

import pytest

from tests.docs_examples import outputs, pages, run
from tests.support import ROOT

TOKEN_A = "ugt_" + "a" * 43
TOKEN_B = "ugt_" + "b" * 43
TOKEN_C = "ugt_" + "c" * 43
RUN_1 = "ugt_" + "1" * 43
RUN_2 = "ugt_" + "2" * 43

PAGE = """# A page

Some text.

```console
$ curl -sS -i "$URL" \\
    -d '{"user_group_id": "acme"}'
HTTP/1.1 200 OK
{"token":"TOKEN_A"}

$ echo hi
hi
```

<!-- docs-examples: server {"USERGROUPS": {"THROTTLE_RATE": "2/minute"}} -->
```console
$ true
```
""".replace("TOKEN_A", TOKEN_A)


def test_console_blocks_are_read_with_continuations_outputs_and_directives(tmp_path):
    page = tmp_path / "page.md"
    page.write_text(PAGE)
    first, second = pages.console_blocks(page)
    curl, echo = first.examples
    assert curl.command == 'curl -sS -i "$URL" \\\n    -d \'{"user_group_id": "acme"}\''
    assert curl.output_lines == ["HTTP/1.1 200 OK", f'{{"token":"{TOKEN_A}"}}']
    assert (curl.line, curl.blank_after) == (6, 1)
    assert (echo.command, echo.output) == ("echo hi", "hi")
    assert first.server is None
    assert second.server == {"USERGROUPS": {"THROTTLE_RATE": "2/minute"}}
    assert [example.output for example in second.examples] == [""]


def test_writing_back_unchanged_blocks_leaves_the_page_as_it_was(tmp_path):
    page = tmp_path / "page.md"
    page.write_text(PAGE)
    assert pages.write_back(page, pages.console_blocks(page)) is False
    assert page.read_text() == PAGE


def test_writing_back_replaces_only_the_outputs(tmp_path):
    page = tmp_path / "page.md"
    page.write_text(PAGE)
    blocks = pages.console_blocks(page)
    blocks[0].examples[1].output_lines = ["hello", "world"]
    assert pages.write_back(page, blocks) is True
    assert page.read_text() == PAGE.replace("$ echo hi\nhi\n", "$ echo hi\nhello\nworld\n")


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("```console\ncurl x\n```\n", "starts with '$ '"),
        ("```console\n$ curl x\n", "not closed"),
        ("<!-- docs-examples: serve {} -->\n```console\n$ true\n```\n", "not a docs-examples"),
        ('<!-- docs-examples: server {"DEBUG": true} -->\n```console\n$ true\n```\n', "takes"),
    ],
)
def test_malformed_blocks_are_refused(tmp_path, text, problem):
    page = tmp_path / "page.md"
    page.write_text(text)
    with pytest.raises(ValueError, match=re.escape(problem)):
        pages.console_blocks(page)


def test_every_page_of_the_nav_exists_and_its_console_blocks_read():
    nav = pages.nav_pages(ROOT / "mkdocs.yml")
    assert ROOT / "docs" / "api.md" in nav and ROOT / "docs" / "errors.md" in nav
    examples = [
        example
        for page in nav
        for block in pages.console_blocks(page)
        for example in block.examples
    ]
    commands = " ".join(example.command for example in examples)
    for operation in ("-X GET", "-G", "-X POST", "-X PUT", "-X DELETE", "$URL/list"):
        assert operation in commands, operation


def test_the_same_token_must_stand_where_the_run_gave_the_same_token():
    values = outputs.Values()
    assert values.compare(f'{{"token":"{TOKEN_A}"}}', f'{{"token":"{RUN_1}"}}') == []
    assert values.compare(f'{{"token":"{TOKEN_B}"}}', f'{{"token":"{RUN_2}"}}') == []
    # The stale README: after a rotation, an answer showing a token from elsewhere.
    assert values.compare(f'{{"token":"{TOKEN_C}"}}', f'{{"token":"{RUN_2}"}}') == [
        f"the docs show {TOKEN_C} where the run gave the value the docs showed above as " + TOKEN_B
    ]
    # One token of the docs standing for two of the run.
    assert values.compare(f'{{"token":"{TOKEN_A}"}}', f'{{"token":"{RUN_2}"}}') == [
        f"the docs show {TOKEN_A} where the run gave the value the docs showed above as "
        f"{TOKEN_B}; above, {TOKEN_A} stood for another value"
    ]
    assert values.compare(f'{{"token":"{TOKEN_B}"}}', f'{{"token":"{RUN_2}"}}') == []


def test_anything_else_that_differs_fails_team_ids_included():
    values = outputs.Values()
    docs = f'{{"team_id":1,"token":"{TOKEN_A}"}}'
    assert values.compare(docs, f'{{"team_id":4,"token":"{RUN_1}"}}') == ["the output differs"]
    assert values.compare("", "something") == ["the output differs"]


def test_timestamps_keys_and_prefixes_are_paired_and_throttle_seconds_are_free():
    values = outputs.Values()
    key, run_key = "ugk_" + "k" * 43, "ugk_" + "K" * 43
    docs = f"Created API key ugk_kkkkkkkk… {key} at 2026-11-21T19:51:30.555182Z"
    run_text = f"Created API key ugk_KKKKKKKK… {run_key} at 2027-01-02T03:04:05.000001Z"
    assert values.compare(docs, run_text) == []
    assert values.in_command("revoke_api_key ugk_kkkkkkkk") == "revoke_api_key ugk_KKKKKKKK"
    throttled = "Retry-After: {0}\nExpected available in {0} seconds."
    assert values.compare(throttled.format(60), throttled.format(59)) == []
    assert values.compare("amount: 60", "amount: 59") == ["the output differs"]


def test_embed_tokens_are_paired_like_group_tokens():
    values = outputs.Values()
    docs_token, run_token = "eyJhbGci.eyJzdWIi.c2lnbmF0dXJl", "eyJhbGci.eyJzdWIi.b3RoZXI"
    assert (
        values.compare(f'{{"embed_token":"{docs_token}"}}', f'{{"embed_token":"{run_token}"}}')
        == []
    )
    assert values.in_command(f"-H 'Authorization: Embed {docs_token}'") == (
        f"-H 'Authorization: Embed {run_token}'"
    )
    assert values.compare(f"Embed {docs_token}", "Embed eyJhbGci.eyJzdWIi.bmV3") == [
        f"the docs show {docs_token} where the run gave a value new here; above, "
        f"{docs_token} stood for another value"
    ]


def test_commands_are_run_with_the_runs_values_and_unknown_ones_as_written():
    values = outputs.Values()
    values.compare(TOKEN_A, RUN_1)
    command = f'curl -d \'{{"current_token": "{TOKEN_A}"}}\' -H "Token {TOKEN_B}"'
    assert values.in_command(command) == command.replace(TOKEN_A, RUN_1)
    assert values.as_docs_would(f"{RUN_1} {RUN_2}") == f"{TOKEN_A} {RUN_2}"


def token_in(text: str) -> str:
    return next(m.group() for m in outputs.VALUES.finditer(text) if m.lastgroup == "token")


CURL_I = (
    "HTTP/1.1 100 Continue\r\n\r\n"
    "HTTP/1.1 401 Unauthorized\r\nServer: gunicorn\r\nContent-Type: application/json\r\n"
    "Allow: GET, POST\r\nWWW-Authenticate: Token\r\n\r\n"
    '{"success":0}'
)


def test_an_http_answer_is_shown_as_status_headers_shown_and_body():
    assert outputs.as_shown(CURL_I, set()) == (
        'HTTP/1.1 401 Unauthorized\nWWW-Authenticate: Token\n{"success":0}'
    )
    assert outputs.as_shown(CURL_I, {"content-type"}) == (
        "HTTP/1.1 401 Unauthorized\nContent-Type: application/json\n"
        'WWW-Authenticate: Token\n{"success":0}'
    )
    allowed = CURL_I.replace("401 Unauthorized", "405 Method Not Allowed")
    assert "Allow: GET, POST" in outputs.as_shown(allowed, set())
    assert outputs.shown_headers("HTTP/1.1 200 OK\nContent-Type: x\nAllow: y\n{}") == {
        "content-type",
        "allow",
    }
    assert outputs.as_shown("plain  \r\ntext\n\n", set()) == "plain\ntext"


@pytest.mark.live
@pytest.mark.slow
def test_against_a_live_server_a_stale_output_fails_and_a_rewrite_passes(tmp_path):
    """The README's stale PUT: written from a run, the page passes a second run (new
    tokens, paired); with the PUT showing the token from before the rotation it fails,
    and a rewrite puts it right without touching anything else."""
    page = tmp_path / "page.md"
    page.write_text(
        "# Rotate, then update\n\n```console\n"
        '$ curl -sS -i -X GET "$URL" -H "Authorization: Token $API_KEY" '
        "-H 'Content-Type: application/json' -d '{\"user_group_id\": \"acme\"}'\n"
        f'{{"token":"{TOKEN_A}"}}\n\n'
        '$ curl -sS -X POST "$URL" -H "Authorization: Token $API_KEY" '
        f"-H 'Content-Type: application/json' -d '{{\"current_token\": \"{TOKEN_A}\"}}'\n\n"
        '$ curl -sS -X PUT "$URL" -H "Authorization: Token $API_KEY" '
        '-H \'Content-Type: application/json\' -d \'{"user_group_id": "acme", "name": "A"}\'\n'
        "```\n"
    )
    assert run.run([page], mode="fresh") == []
    rewritten = page.read_text()
    first, rotated, updated = pages.console_blocks(page)[0].examples
    assert first.output.startswith("HTTP/1.1 200 OK\n") and '"team_id":4' in first.output
    old_token, new_token = (token_in(example.output) for example in (first, rotated))
    assert old_token in rotated.command and new_token != old_token
    assert f'"token":"{new_token}","name":"A"' in updated.output

    assert run.run([page]) == []

    page.write_text(
        rewritten.replace(f'"token":"{new_token}","name":"A"', f'"token":"{old_token}","name":"A"')
    )
    (difference,) = run.run([page])
    assert difference.startswith(f"page.md:{updated.line}: $ curl -sS -X PUT")
    assert (
        f"the docs show {old_token} where the run gave the value the docs showed above as {new_token}"
        in difference
    )

    # A rewrite keeps every value the docs show that pairs with the run, and puts the
    # rotated token back where the stale one stood: the page is as it was before.
    assert run.run([page], mode="rewrite") == []
    assert page.read_text() == rewritten
