"""0.2's documented import paths keep working in 0.3, each with a DeprecationWarning that
names the new place (docs/upgrading.md lists the same moves)."""

import importlib

import pytest

MOVES = [
    ("usergroups.authentication", "usergroups.auth.api_key", "APIKeyAuthentication"),
    ("usergroups.group_token_auth", "usergroups.auth.group_token", "GroupTokenAuthentication"),
    ("usergroups.permissions", "usergroups.auth.permissions", "HasEmbedToken"),
    ("usergroups.embed.authentication", "usergroups.auth.embed", "EmbedTokenAuthentication"),
    ("usergroups.exceptions", "usergroups.api.exceptions", "exception_handler"),
    ("usergroups.variables", "usergroups.contrib.variables", "render_sql"),
]


@pytest.mark.parametrize(("old", "new", "name"), MOVES, ids=[old for old, _, _ in MOVES])
def test_an_old_path_gives_the_new_object_with_a_warning(old, new, name):
    with pytest.warns(DeprecationWarning, match=f"{old}.{name} moved to {new}.{name}"):
        moved = getattr(importlib.import_module(old), name)
    assert moved is getattr(importlib.import_module(new), name)


def test_from_import_of_an_old_path_warns():
    with pytest.warns(DeprecationWarning, match="usergroups.auth.permissions"):
        from usergroups.permissions import HasGroupToken
    from usergroups.auth.permissions import HasGroupToken as current

    assert HasGroupToken is current


@pytest.mark.parametrize("old", [old for old, _, _ in MOVES])
def test_an_unknown_name_is_still_an_attribute_error(old):
    assert not hasattr(importlib.import_module(old), "no_such_name")


def test_the_upgrade_guide_lists_every_move():
    from pathlib import Path

    guide = (Path(__file__).parents[1] / "docs" / "upgrading.md").read_text()
    for old, new, _name in MOVES:
        assert f"| `{old}` | `{new}` |" in guide
