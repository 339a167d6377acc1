"""The reference pages of the docs name every setting and every system check the code has.

A setting or a check added without its line in docs/settings.md or docs/checks.md fails
here, so the pages cannot fall behind the code silently.
"""

import re

import pytest

from tests.support import ROOT
from usergroups.conf import DEFAULTS

DOCS = ROOT / "docs"


def shown(value) -> str:
    """A default as the settings table writes it."""
    return f'"{value}"' if isinstance(value, str) else str(value)


@pytest.mark.parametrize("name", sorted(DEFAULTS))
def test_every_setting_is_in_the_settings_table_with_its_default(name):
    row = f"| `{name}` | `{shown(DEFAULTS[name])}`"
    assert row in (DOCS / "settings.md").read_text(), row


def test_every_system_check_id_is_on_the_checks_page():
    source = (ROOT / "usergroups" / "checks.py").read_text()
    example = (ROOT / "example_project" / "demo" / "checks.py").read_text()
    ids = set(re.findall(r'id="((?:usergroups|example_project)\.[EW]\d{3})"', source + example))
    assert "usergroups.W001" in ids and "example_project.E001" in ids
    page = (DOCS / "checks.md").read_text()
    assert sorted(id_ for id_ in ids if f"| `{id_}` |" not in page) == []
