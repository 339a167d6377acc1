"""Logs never contain an API key or a group token (a key is named by its prefix), and
neither does a Django error report of a failure inside the services."""

import io
import logging
import sys

import pytest
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.views.debug import ExceptionReporter
from rest_framework.test import APIClient

from tests.support.api import API_URL, client_for, get_or_create
from tests.support.factories import UserGroupFactory, WorkspaceFactory
from tests.support.leaks import SECRET_SHAPE, find_leaks
from tests.support.queries import verb
from usergroups import crypto, services
from usergroups.models import APIKey, UserGroup


class Recorder(logging.Handler):
    def __init__(self):
        super().__init__(level=logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record):
        self.records.append(record)


@pytest.fixture
def log_records():
    """Every record of every logger at DEBUG, including loggers that do not propagate."""
    recorder = Recorder()
    manager = logging.root.manager
    loggers = [logging.root] + [
        logger for logger in manager.loggerDict.values() if isinstance(logger, logging.Logger)
    ]
    saved = [(logger, logger.level, logger.disabled) for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.DEBUG)
        logger.disabled = False
        if logger is logging.root or not logger.propagate:
            logger.addHandler(recorder)
    # Loggers created later (first use during the test) inherit DEBUG from the root.
    try:
        yield recorder.records
    finally:
        for logger, level, disabled in saved:
            logger.setLevel(level)
            logger.disabled = disabled
            logger.removeHandler(recorder)


def everything_said(record: logging.LogRecord) -> str:
    """The record formatted (message, traceback, stack) plus all its attributes."""
    formatter = logging.Formatter("%(name)s %(levelname)s %(message)s")
    parts = [formatter.format(record), repr(record.args), str(record.exc_text)]
    parts.append(repr(vars(record)))
    return "\n".join(parts)


def run_command(name, *args):
    out, err = io.StringIO(), io.StringIO()
    call_command(name, *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


@pytest.mark.django_db
def test_a_full_request_cycle_logs_no_secret(log_records):
    secrets = {}
    with CaptureQueriesContext(connection):  # SQL and its parameters get logged too
        key, _ = run_command("create_api_key", "--workspace", "logs", "--name", "ci")
        key = key.strip()
        secrets["key"] = key
        api = client_for(key)

        created = get_or_create(api, {"user_group_id": "acme"})
        assert created.status_code == 200
        token = secrets["token"] = created.json()["user_group"]["token"]
        again = get_or_create(api, {"user_group_id": "acme"})
        assert again.json()["user_group"]["token"] == token

        rotated = api.post(API_URL, {"current_token": token}, format="json")
        assert rotated.status_code == 200
        secrets["rotated token"] = rotated.json()["user_group"]["token"]
        assert api.post(API_URL, {"current_token": token}, format="json").status_code == 404

        # A real-looking token nobody holds, and another workspace's token.
        unknown = secrets["unknown token"] = crypto.new_group_token()
        assert api.post(API_URL, {"current_token": unknown}, format="json").status_code == 404
        foreign = UserGroupFactory(workspace=WorkspaceFactory(slug="elsewhere"))
        secrets["foreign token"] = foreign.token
        response = api.post(API_URL, {"current_token": foreign.token}, format="json")
        assert response.status_code == 404

        # Wrong keys: right prefix with a wrong rest, and a well-formed unknown key.
        wrong = secrets["wrong key"] = key[: crypto.KEY_LOOKUP_LENGTH] + crypto.new_api_key()[12:]
        assert get_or_create(client_for(wrong), {"user_group_id": "acme"}).status_code == 401
        random_key = secrets["random key"] = crypto.new_api_key()
        assert get_or_create(client_for(random_key), {"user_group_id": "acme"}).status_code == 401
        # A group token used as a key.
        response = get_or_create(client_for(secrets["rotated token"]), {"user_group_id": "acme"})
        assert response.status_code == 401

        # Revoked keys, by full key and by prefix.
        revoked = secrets["revoked key"] = run_command("create_api_key", "--workspace", "logs")[
            0
        ].strip()
        run_command("revoke_api_key", revoked)
        assert get_or_create(client_for(revoked), {"user_group_id": "acme"}).status_code == 401
        by_prefix = secrets["key revoked by prefix"] = run_command("create_api_key")[0].strip()
        run_command("revoke_api_key", by_prefix[: crypto.KEY_LOOKUP_LENGTH])
        assert get_or_create(client_for(by_prefix), {"user_group_id": "acme"}).status_code == 401
        run_command("revoke_api_key", by_prefix)  # twice: harmless, and logged alike

    said = [everything_said(record) for record in log_records]
    # The capture works: the cycle was logged, SQL with parameters included...
    names = {record.name for record in log_records}
    assert {"usergroups.services.groups", "usergroups.auth.api_key", "django.request"} <= names
    assert "django.db.backends" in names
    assert any("Rotated the token" in text for text in said)
    # ...a key is named by its prefix...
    assert any(
        f"Refused revoked API key {revoked[: crypto.KEY_LOOKUP_LENGTH]}" in text for text in said
    )
    # ...and no record holds a secret, whole or in part, nor anything shaped like one.
    leaks = {text.split("\n")[0][:120]: find_leaks(text, secrets) for text in said}
    assert {line: found for line, found in leaks.items() if found} == {}
    assert [text for text in said if SECRET_SHAPE.search(text)] == []


def test_the_log_check_can_fail():
    token = crypto.new_group_token()
    record = logging.LogRecord("x", logging.INFO, __file__, 1, "token %s", (token[4:20],), None)
    assert find_leaks(everything_said(record), {"token": token})


@pytest.fixture
def failing_rotation(monkeypatch):
    """The compare-and-swap update of a rotation fails in the database driver, as a lost
    connection would (whether the service issues it through the ORM or as raw SQL);
    the token it would have set is known."""
    table = UserGroup._meta.db_table

    def fail_token_updates(execute, sql, params, many, context):
        if verb(sql).startswith("UPDATE") and table in sql and "token_digest" in sql:
            raise RuntimeError("the database went away")
        return execute(sql, params, many, context)

    next_token = crypto.new_group_token()
    monkeypatch.setattr(crypto, "new_group_token", lambda: next_token)
    with connection.execute_wrapper(fail_token_updates):
        yield next_token


def assert_report_hides(reporter, secrets):
    text = reporter.get_traceback_text()
    html = reporter.get_traceback_html()
    frames = reporter.get_traceback_frames()
    variables = [
        f"{frame['filename']}:{frame['lineno']} {frame['function']}: {name} = {value}"
        for frame in frames
        for name, value in reporter.filter.get_traceback_frame_variables(
            reporter.request, frame["tb"].tb_frame
        )
    ]
    # The report is real: it shows the failure, the service frames and their variables...
    assert "the database went away" in text
    functions = [frame["function"] for frame in frames]
    assert "rotate_token" in functions and "_swap_token" in functions
    assert any(
        line.endswith("rotate_token: current_token = ********************") for line in variables
    )
    assert "old_digest" in html and "current_token" in html
    # ...and no secret, in any frame's variables, the text or the HTML.
    assert [line for line in variables if find_leaks(line, secrets)] == []
    assert find_leaks(text, secrets) == []
    assert find_leaks(html, secrets) == []


# Transactional: a failed statement inside a test's wrapping transaction would poison it.
@pytest.mark.django_db(transaction=True)
def test_error_report_of_a_failed_rotation_hides_the_token(
    api_key, group, failing_rotation, log_records
):
    api = APIClient(raise_request_exception=False)
    api.credentials(HTTP_AUTHORIZATION=f"Token {api_key.key}")
    response = api.post(API_URL, {"current_token": group.token}, format="json")
    assert response.status_code == 500
    assert group.token not in response.content.decode()

    # What AdminEmailHandler would mail: the report of the logged server error.
    (record,) = [r for r in log_records if r.name == "django.request" and r.exc_info]
    reporter = ExceptionReporter(record.request, *record.exc_info, is_email=True)
    secrets = {"current token": group.token, "next token": failing_rotation, "key": api_key.key}
    assert_report_hides(reporter, secrets)
    assert "HTTP_AUTHORIZATION" in reporter.get_traceback_text()
    # The log record itself (its formatted traceback) holds no secret either.
    assert find_leaks(everything_said(record), secrets) == []
    # And the failed rotation changed nothing.
    assert UserGroup.objects.get(pk=group.pk).token_digest == crypto.digest(group.token)


def report_of(call):
    try:
        call()
    except RuntimeError:
        return ExceptionReporter(None, *sys.exc_info())
    raise AssertionError("the call did not fail")


@pytest.mark.django_db(transaction=True)
def test_error_report_of_a_direct_service_call_hides_the_token(group, failing_rotation):
    # Caught one frame up, so the report starts at a frame that holds no token.
    reporter = report_of(lambda: services.groups.rotate_token(group.workspace_id, group.token))
    assert_report_hides(reporter, {"current token": group.token, "next token": failing_rotation})


@pytest.mark.django_db
def test_a_key_is_named_by_its_prefix_in_the_logs(api_key, log_records):
    APIKey.objects.filter(pk=api_key.pk).update(revoked_at="2020-01-01T00:00:00Z")
    assert get_or_create(client_for(api_key.key), {"user_group_id": "x"}).status_code == 401
    messages = [record.getMessage() for record in log_records]
    assert f"Refused revoked API key {api_key.prefix}" in messages
