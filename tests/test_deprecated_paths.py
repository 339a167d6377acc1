"""Documented import paths that moved keep working for one release, each with a
DeprecationWarning that names the new place (docs/upgrading.md lists the same moves), and
are gone after it."""

import importlib

import pytest
from django.utils.module_loading import import_string

from tests.support import ROOT

# (old module, where the name lives now, a name, the release that moved it)
MOVES = [
    ("usergroups.services.webhooks", "usergroups.webhooks.registry", "create_webhook", "0.4"),
    ("usergroups.services.webhooks", "usergroups.webhooks.deliveries", "attempt", "0.4"),
    ("usergroups.api.exceptions", "usergroups.errors.handler", "exception_handler", "0.4"),
    ("usergroups.api.exceptions", "usergroups.errors.failures", "Conflict", "0.4"),
    ("usergroups.failures", "usergroups.errors.failures", "ContractFailure", "0.4"),
]
#: The paths deprecated in 0.3, which docs/upgrading.md said go away in 0.4: gone.
REMOVED = [
    "usergroups.authentication",
    "usergroups.group_token_auth",
    "usergroups.permissions",
    "usergroups.embed.authentication",
    "usergroups.exceptions",
    "usergroups.variables",
]
REMOVAL = {"0.4": "0.5"}


@pytest.mark.parametrize(
    ("old", "new", "name", "since"), MOVES, ids=[f"{old}.{name}" for old, _, name, _ in MOVES]
)
def test_an_old_path_gives_the_new_object_with_a_warning(old, new, name, since):
    message = (
        f"{old}.{name} is deprecated since django-usergroups {since} and will be removed"
        f" in {REMOVAL[since]}: import it from {new}."
    )
    with pytest.warns(DeprecationWarning) as warned:
        moved = getattr(importlib.import_module(old), name)
    assert [str(warning.message) for warning in warned] == [message]
    assert moved is getattr(importlib.import_module(new), name)


def test_from_import_of_an_old_path_warns():
    with pytest.warns(DeprecationWarning, match="usergroups.errors.failures"):
        from usergroups.failures import ContractFailure
    from usergroups.errors.failures import ContractFailure as current

    assert ContractFailure is current


@pytest.mark.parametrize("old", REMOVED)
def test_a_path_deprecated_in_0_3_is_gone(old):
    with pytest.raises(ModuleNotFoundError, match=f"No module named '{old}'"):
        importlib.import_module(old)


def test_the_old_exception_handler_setting_still_resolves():
    """DRF imports ``REST_FRAMEWORK["EXCEPTION_HANDLER"]`` by its dotted path, as
    ``import_string`` does."""
    from usergroups.errors.handler import exception_handler

    with pytest.warns(DeprecationWarning, match="usergroups.errors.handler"):
        handler = import_string("usergroups.api.exceptions.exception_handler")
    assert handler is exception_handler


@pytest.mark.parametrize("old", sorted({old for old, _, _, _ in MOVES}))
def test_an_unknown_name_is_still_an_attribute_error(old):
    with pytest.raises(AttributeError, match=f"module '{old}' has no attribute 'no_such_name'"):
        importlib.import_module(old).no_such_name  # noqa: B018


def test_the_upgrade_guide_lists_every_move():
    rows = [
        line for line in (ROOT / "docs" / "upgrading.md").read_text().splitlines() if "| `" in line
    ]
    for old, new, _name, _since in MOVES:
        assert any(f"`{old}`" in row and f"`{new}`" in row for row in rows), (old, new)
