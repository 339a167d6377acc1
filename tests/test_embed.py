"""Resolving group tokens for a host's dashboard endpoints."""

from datetime import timedelta

import pytest
from django.test import override_settings
from rest_framework.exceptions import AuthenticationFailed
from rest_framework.test import APIRequestFactory

from usergroups import services
from usergroups.auth.group_token import GroupTokenAuthentication, resolve_group_token

factory = APIRequestFactory()


def authenticate(**headers):
    return GroupTokenAuthentication().authenticate(factory.get("/dashboard", **headers))


def test_current_token_resolves(group, django_assert_num_queries):
    with django_assert_num_queries(1):
        assert resolve_group_token(group.token).team_id == group.pk


@pytest.mark.parametrize("token", ["", "ugt_short", "ugk_" + "a" * 43, "ugt_" + "!" * 43, None, 42])
def test_malformed_tokens_cost_no_query(db, token, django_assert_num_queries):
    with django_assert_num_queries(0):
        assert resolve_group_token(token) is None


def test_rotated_token_is_refused(group):
    old = group.token
    rotated = services.groups.rotate_group_token(group)
    assert resolve_group_token(old) is None
    assert resolve_group_token(rotated.token).team_id == group.pk


@override_settings(USERGROUPS={"ROTATION_GRACE_SECONDS": 60})
def test_rotated_token_resolves_during_grace_only(group):
    old = group.token
    rotated = services.groups.rotate_group_token(group)
    assert resolve_group_token(old).team_id == group.pk
    group.__class__.objects.filter(pk=group.pk).update(
        previous_token_valid_until=rotated.token_rotated_at - timedelta(seconds=1)
    )
    assert resolve_group_token(old) is None


def test_deleted_group_token_is_refused(group):
    token = group.token
    group.delete()
    assert resolve_group_token(token) is None


def test_authentication_class_exposes_the_group(group):
    user, auth = authenticate(HTTP_AUTHORIZATION=f"GroupToken {group.token}")
    assert auth.team_id == group.pk
    assert user.is_authenticated and not user.is_anonymous
    assert (user.team_id, user.pk) == (group.pk, f"usergroup:{group.pk}")


def test_scheme_is_case_insensitive(group):
    assert authenticate(HTTP_AUTHORIZATION=f"grouptoken {group.token}")[1].team_id == group.pk


def test_other_schemes_are_left_to_other_classes(group):
    assert authenticate(HTTP_AUTHORIZATION=f"Token {group.token}") is None
    assert authenticate() is None


def test_token_in_query_string_is_ignored(group):
    request = factory.get("/dashboard", {"token": group.token, "group_token": group.token})
    assert GroupTokenAuthentication().authenticate(request) is None


def test_bad_token_fails(group):
    with pytest.raises(AuthenticationFailed):
        authenticate(HTTP_AUTHORIZATION="GroupToken ugt_" + "x" * 43)
    old = group.token
    services.groups.rotate_group_token(group)
    with pytest.raises(AuthenticationFailed) as raised:
        authenticate(HTTP_AUTHORIZATION=f"GroupToken {old}")
    assert old not in str(raised.value.detail)
