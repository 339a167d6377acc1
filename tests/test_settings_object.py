"""``usergroups.conf.usergroups_settings``: documented defaults, live ``override_settings``."""

import pytest
from django.test import override_settings

from usergroups.conf import SETTINGS, usergroups_settings

DEFAULTS = {name: setting.default for name, setting in SETTINGS.items()}

DOCUMENTED_DEFAULTS = {
    "ROTATION_GRACE_SECONDS": 0,
    "MAX_BODY_BYTES": 1024 * 1024,
    "MAX_PROPERTIES_BYTES": 64 * 1024,
    "MAX_PROPERTIES_DEPTH": 32,
    "MAX_MAPPING_ENTRIES": 1000,
    "KEY_LAST_USED_INTERVAL_SECONDS": 60,
    "THROTTLE_RATE": None,
    "THROTTLE_CACHE": "default",
    "TOKEN_SECRET": None,
    "TOKEN_SECRET_FALLBACKS": None,
}


@pytest.mark.parametrize("name, default", DOCUMENTED_DEFAULTS.items())
def test_defaults_without_the_setting(settings, name, default):
    del settings.USERGROUPS
    assert getattr(usergroups_settings, name) == default


@pytest.mark.parametrize("name, default", DOCUMENTED_DEFAULTS.items())
def test_defaults_with_an_empty_setting(name, default):
    with override_settings(USERGROUPS={}):
        assert getattr(usergroups_settings, name) == default


def test_the_documented_defaults_are_the_defaults():
    assert DOCUMENTED_DEFAULTS.items() <= DEFAULTS.items()


@pytest.mark.parametrize("name", DEFAULTS)
def test_every_option_reads_its_default(settings, name):
    del settings.USERGROUPS
    assert getattr(usergroups_settings, name) == DEFAULTS[name]


def test_override_settings_takes_effect_at_once_and_is_undone():
    assert usergroups_settings.MAX_BODY_BYTES == 1024 * 1024
    with override_settings(USERGROUPS={"MAX_BODY_BYTES": 10, "ROTATION_GRACE_SECONDS": 5}):
        assert usergroups_settings.MAX_BODY_BYTES == 10
        assert usergroups_settings.ROTATION_GRACE_SECONDS == 5
        # Options not given keep their defaults.
        assert usergroups_settings.MAX_PROPERTIES_DEPTH == 32
        with override_settings(USERGROUPS={"MAX_BODY_BYTES": 20}):
            assert usergroups_settings.MAX_BODY_BYTES == 20
            assert usergroups_settings.ROTATION_GRACE_SECONDS == 0
        assert usergroups_settings.MAX_BODY_BYTES == 10
    assert usergroups_settings.MAX_BODY_BYTES == 1024 * 1024
    assert usergroups_settings.ROTATION_GRACE_SECONDS == 0


def test_a_change_that_sends_no_setting_changed_applies_too():
    """Nothing is memoized, so nothing waits for ``setting_changed``: an assignment to
    ``django.conf.settings`` and a change of the dict in place send none, and apply."""
    from django.conf import settings

    project = settings.USERGROUPS
    try:
        settings.USERGROUPS = {"MAX_BODY_BYTES": 10}
        assert usergroups_settings.MAX_BODY_BYTES == 10
        settings.USERGROUPS["MAX_BODY_BYTES"] = 20
        assert usergroups_settings.MAX_BODY_BYTES == 20
    finally:
        settings.USERGROUPS = project
    assert usergroups_settings.MAX_BODY_BYTES == 1024 * 1024


@override_settings(USERGROUPS={"THROTTLE_RATE": "5/minute"})
def test_override_settings_as_a_decorator():
    assert usergroups_settings.THROTTLE_RATE == "5/minute"


def test_pytest_django_settings_fixture_is_followed(settings):
    settings.USERGROUPS = {"KEY_LAST_USED_INTERVAL_SECONDS": 1}
    assert usergroups_settings.KEY_LAST_USED_INTERVAL_SECONDS == 1
    settings.USERGROUPS = {"KEY_LAST_USED_INTERVAL_SECONDS": 2}
    assert usergroups_settings.KEY_LAST_USED_INTERVAL_SECONDS == 2


def test_a_given_none_is_kept():
    with override_settings(USERGROUPS={"THROTTLE_RATE": None, "TOKEN_SECRET": None}):
        assert usergroups_settings.THROTTLE_RATE is None
        assert usergroups_settings.TOKEN_SECRET is None


def test_a_setting_that_is_not_a_dict_gives_the_defaults():
    # Reported by the system check usergroups.E007; never a crash at request time.
    with override_settings(USERGROUPS=["MAX_BODY_BYTES", 10]):
        assert usergroups_settings.MAX_BODY_BYTES == 1024 * 1024


@pytest.mark.parametrize(
    "name", ["UNKNOWN", "max_body_bytes", "MAX_BODY", "DEFAULTS", "__wrapped__"]
)
def test_unknown_names_raise_attribute_error(name):
    with pytest.raises(AttributeError):
        getattr(usergroups_settings, name)
    assert not hasattr(usergroups_settings, name)
    assert getattr(usergroups_settings, name, "fallback") == "fallback"


def test_unknown_names_in_the_setting_are_not_attributes():
    with override_settings(USERGROUPS={"NOT_AN_OPTION": 1}):
        assert not hasattr(usergroups_settings, "NOT_AN_OPTION")
