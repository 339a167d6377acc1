"""APIKeyAuthentication on its own, find_api_key, and when ``last_used_at`` is written."""

from contextlib import contextmanager
from datetime import timedelta

import pytest
from django.contrib.auth.models import AnonymousUser
from django.db import IntegrityError, connection, transaction
from django.test import override_settings
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from rest_framework.exceptions import AuthenticationFailed
from rest_framework.request import Request
from rest_framework.test import APIRequestFactory

from tests.support.api import get_or_create
from tests.support.factories import APIKeyFactory, UserGroupFactory
from usergroups import crypto
from usergroups.auth.api_key import APIKeyAuthentication
from usergroups.auth.permissions import HasAPIKey
from usergroups.models import APIKey
from usergroups.services.keys import find_api_key, revoke_key

factory = APIRequestFactory()


def request_with(header=None) -> Request:
    extra = {} if header is None else {"HTTP_AUTHORIZATION": header}
    return Request(factory.get("/api/user", **extra), authenticators=[APIKeyAuthentication()])


def authenticate(header=None):
    return APIKeyAuthentication().authenticate(request_with(header))


def writes(queries) -> list[str]:
    return [
        q["sql"]
        for q in queries
        if q["sql"].lstrip().upper().startswith(("INSERT", "UPDATE", "DELETE"))
    ]


def last_used(api_key):
    return APIKey.objects.values_list("last_used_at", flat=True).get(pk=api_key.pk)


def set_last_used(api_key, when) -> None:
    APIKey.objects.filter(pk=api_key.pk).update(last_used_at=when)


# --- authenticate() -------------------------------------------------------------------------


@pytest.mark.parametrize("scheme", ["Token", "token", "TOKEN"])
def test_good_key_gives_an_anonymous_user_and_the_key(api_key, scheme):
    user, auth = authenticate(f"{scheme} {api_key.key}")
    assert isinstance(user, AnonymousUser)
    assert isinstance(auth, APIKey)
    assert auth.pk == api_key.pk
    assert auth.workspace_id == api_key.workspace_id


def test_surrounding_whitespace_is_tolerated(api_key):
    _, auth = authenticate(f"  Token   {api_key.key}  ")
    assert auth.pk == api_key.pk


def test_no_header_is_none(db):
    assert authenticate() is None


def test_authenticate_header_is_the_scheme_word():
    assert APIKeyAuthentication().authenticate_header(request_with()) == "Token"


def _revoked(workspace):
    key = APIKeyFactory(workspace=workspace)
    revoke_key(key)
    return "Token " + key.key


BAD = {
    "empty": lambda ws: "",
    "scheme-only": lambda ws: "Token",
    "bearer": lambda ws: "Bearer " + APIKeyFactory(workspace=ws).key,
    "basic": lambda ws: "Basic dXNlcjpwYXNz",
    "extra-part": lambda ws: "Token " + APIKeyFactory(workspace=ws).key + " more",
    "unknown": lambda ws: "Token " + crypto.new_api_key(),
    "malformed": lambda ws: "Token ugk_nope",
    "group-token": lambda ws: "Token " + UserGroupFactory(workspace=ws).token,
    "revoked": _revoked,
    "expired": lambda ws: (
        "Token " + APIKeyFactory(workspace=ws, expires_at=timezone.now() - timedelta(minutes=1)).key
    ),
    "expires-now": lambda ws: "Token " + APIKeyFactory(workspace=ws, expires_at=timezone.now()).key,
}


@pytest.mark.parametrize("make_header", BAD.values(), ids=BAD.keys())
def test_anything_else_raises_authentication_failed(workspace, make_header):
    header = make_header(workspace)
    with pytest.raises(AuthenticationFailed) as failure:
        authenticate(header)
    assert failure.value.status_code == 401
    # The message never repeats the credential.
    credential = header.split()[-1] if header.split() else ""
    assert len(credential) < 20 or credential not in str(failure.value.detail)


def test_refused_keys_are_not_marked_used(workspace):
    key = APIKeyFactory(workspace=workspace)
    revoke_key(key)
    with pytest.raises(AuthenticationFailed):
        authenticate(f"Token {key.key}")
    assert last_used(key) is None


def test_has_api_key_needs_an_accepted_key(api_key):
    permission = HasAPIKey()
    request = request_with()
    assert permission.has_permission(request, None) is False
    request = request_with(f"Token {api_key.key}")
    assert request.user is not None  # runs the authenticators
    assert permission.has_permission(request, None) is True


# --- find_api_key() ---------------------------------------------------------------------------


def test_find_api_key_finds_the_row(api_key, django_assert_num_queries):
    with django_assert_num_queries(1):
        assert find_api_key(api_key.key) == api_key


@pytest.mark.parametrize("forge", ["all-A", "last-char", "reversed-secret"])
def test_right_prefix_wrong_secret_is_refused(api_key, forge, django_assert_num_queries):
    key = api_key.key
    prefix, secret = key[: crypto.KEY_LOOKUP_LENGTH], key[crypto.KEY_LOOKUP_LENGTH :]
    forged = (
        prefix
        + {
            "all-A": "A" * len(secret),
            "last-char": secret[:-1] + ("B" if secret[-1] == "A" else "A"),
            "reversed-secret": secret[::-1],
        }[forge]
    )
    assert forged != key and crypto.looks_like_api_key(forged)
    # No row has the forged key's digest, though one has its prefix.
    with django_assert_num_queries(1):
        assert find_api_key(forged) is None
    with pytest.raises(AuthenticationFailed):
        authenticate(f"Token {forged}")


def test_well_formed_unknown_key_costs_one_query(db, django_assert_num_queries):
    with django_assert_num_queries(1):
        assert find_api_key(crypto.new_api_key()) is None


@pytest.mark.parametrize(
    "key",
    ["", "ugk_", "ugk_short", "ugt_" + "A" * 43, "ugk_" + "A" * 44, "ugk_" + "!" * 43, None, 42],
)
def test_malformed_keys_cost_no_query(db, key, django_assert_num_queries):
    with django_assert_num_queries(0):
        assert find_api_key(key) is None


# --- last_used_at ------------------------------------------------------------------------------


def test_first_use_records_last_used_at(api_key):
    assert last_used(api_key) is None
    before = timezone.now()
    with CaptureQueriesContext(connection) as queries:
        authenticate(f"Token {api_key.key}")
    assert len(writes(queries)) == 1
    assert before <= last_used(api_key) <= timezone.now()


def test_use_within_the_interval_writes_nothing(api_key, django_assert_num_queries):
    authenticate(f"Token {api_key.key}")
    stamp = last_used(api_key)
    with django_assert_num_queries(1) as queries:
        authenticate(f"Token {api_key.key}")
    assert writes(queries.captured_queries) == []
    assert last_used(api_key) == stamp


def test_use_just_inside_the_interval_writes_nothing(api_key):
    stamp = timezone.now() - timedelta(seconds=55)
    set_last_used(api_key, stamp)
    with CaptureQueriesContext(connection) as queries:
        authenticate(f"Token {api_key.key}")
    assert writes(queries) == []
    assert last_used(api_key) == stamp


def test_use_after_the_interval_writes_again(api_key):
    stale = timezone.now() - timedelta(seconds=61)
    set_last_used(api_key, stale)
    with CaptureQueriesContext(connection) as queries:
        authenticate(f"Token {api_key.key}")
    assert len(writes(queries)) == 1
    assert last_used(api_key) > stale + timedelta(seconds=60)


@override_settings(USERGROUPS={"KEY_LAST_USED_INTERVAL_SECONDS": 3600})
def test_interval_follows_the_setting(api_key):
    stale = timezone.now() - timedelta(seconds=600)
    set_last_used(api_key, stale)
    authenticate(f"Token {api_key.key}")
    assert last_used(api_key) == stale
    set_last_used(api_key, timezone.now() - timedelta(seconds=3601))
    authenticate(f"Token {api_key.key}")
    assert last_used(api_key) > stale


def test_consecutive_api_requests_write_the_key_once(api_client, api_key):
    with CaptureQueriesContext(connection) as first:
        assert get_or_create(api_client, {"user_group_id": "acme"}).status_code == 200
    assert sum("last_used_at" in sql for sql in writes(first)) == 1
    for _ in range(3):
        with CaptureQueriesContext(connection) as later:
            assert get_or_create(api_client, {"user_group_id": "acme"}).status_code == 200
        assert writes(later) == []


# --- The lookup: by the key's full digest, so timing tells nothing about prefixes -------------


@contextmanager
def key_lookups():
    """``[(sql, params)]`` of every statement on the API key table run inside the block."""
    table = APIKey._meta.db_table
    seen = []

    def record(execute, sql, params, many, context):
        if table in sql:
            values = params.values() if isinstance(params, dict) else params or ()
            seen.append((sql, list(values)))
        return execute(sql, params, many, context)

    with connection.execute_wrapper(record):
        yield seen


def where_clause(sql: str) -> str:
    return sql.split(" WHERE ", 1)[1]


def test_an_authenticated_request_looks_the_key_up_by_its_full_digest(api_key, api_client):
    APIKey.objects.filter(pk=api_key.pk).update(last_used_at=timezone.now())
    quote = connection.ops.quote_name
    with key_lookups() as statements:
        assert get_or_create(api_client, {"user_group_id": "acme"}).status_code == 200
    ((sql, params),) = statements
    assert quote("digest") in where_clause(sql)
    assert quote("prefix") not in where_clause(sql)
    assert params == [crypto.digest(api_key.key)]
    assert not any(api_key.prefix in str(param) for param in params)


def test_a_wrong_key_with_a_known_prefix_costs_what_an_unknown_prefix_costs(api_key):
    known_prefix = api_key.prefix + crypto.new_api_key()[crypto.KEY_LOOKUP_LENGTH :]
    unknown_prefix = crypto.new_api_key()
    assert known_prefix != api_key.key and crypto.looks_like_api_key(known_prefix)
    assert not APIKey.objects.filter(prefix=unknown_prefix[: crypto.KEY_LOOKUP_LENGTH]).exists()
    runs = {}
    for name, key in {"known": known_prefix, "unknown": unknown_prefix}.items():
        with key_lookups() as statements:
            with pytest.raises(AuthenticationFailed):
                authenticate(f"Token {key}")
        ((sql, params),) = statements
        assert params == [crypto.digest(key)]
        runs[name] = sql
    # One statement, the same text: nothing about the prefix decides what runs.
    assert runs["known"] == runs["unknown"]


def test_two_keys_cannot_share_a_digest(api_key):
    with pytest.raises(IntegrityError), transaction.atomic():
        APIKey.objects.create(
            workspace=api_key.workspace, prefix="ugk_other000", digest=api_key.digest
        )
