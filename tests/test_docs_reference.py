"""The reference pages of the docs name every setting and every system check the code has.

A setting or a check added without its line in docs/settings.md or docs/checks.md fails
here, so the pages cannot fall behind the code silently.
"""

import re

import pytest

from tests.support import ROOT
from usergroups.conf import SETTINGS

DOCS = ROOT / "docs"


def shown(value) -> str:
    """A default as the settings table writes it."""
    return f'"{value}"' if isinstance(value, str) else str(value)


@pytest.mark.parametrize("name", sorted(SETTINGS))
def test_every_setting_is_in_the_settings_table_with_its_default_and_doc(name):
    """A row opens with the spec's default, and its meaning with the spec's doc line."""
    row = table_rows("settings.md")[name]
    assert row.startswith(f"| `{name}` | `{shown(SETTINGS[name].default)}`"), row
    assert f" | {SETTINGS[name].doc}" in row, SETTINGS[name].doc


def test_the_settings_table_names_no_setting_the_spec_lacks():
    assert set(table_rows("settings.md")) == set(SETTINGS)


def test_every_system_check_id_is_on_the_checks_page():
    source = (ROOT / "usergroups" / "checks.py").read_text()
    example = (ROOT / "example_project" / "demo" / "checks.py").read_text()
    ids = set(re.findall(r'id="((?:usergroups|example_project)\.[EW]\d{3})"', source + example))
    assert "usergroups.W001" in ids and "example_project.E001" in ids
    page = (DOCS / "checks.md").read_text()
    assert sorted(id_ for id_ in ids if f"| `{id_}` |" not in page) == []


# What the checks say of each setting, found by running them ---------------------------------

#: Values no setting takes: each setting is tried with each, alone.
BAD_VALUES = [
    object(), -1, 0, "", "1/fortnight", True, False, None, 10**12, 15.5, "nowhere", "default",
]  # fmt: skip
#: Set beside each value, so that the throttling checks run at all, and warn of nothing.
CONTEXT = {"THROTTLE_RATE": "1/second", "THROTTLE_CACHE": "shared", "EMBED_REQUIRE_ORIGIN": True}
#: A cache shared by processes beside the default per-process one (never used, only named).
CACHES = {
    "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"},
    "shared": {"BACKEND": "django.core.cache.backends.db.DatabaseCache", "LOCATION": "none"},
}
CHECK_ID = re.compile(r"usergroups\.[EW]\d{3}")


def raised_ids(options) -> set[str]:
    """The ids the app's checks (deployment ones included) raise for ``USERGROUPS=options``."""
    from django.core.checks.registry import registry
    from django.test import override_settings

    checks = [
        check
        for check in registry.get_checks(include_deployment_checks=True)
        if check.__module__ == "usergroups.checks"
    ]
    with override_settings(USERGROUPS=options, CACHES=CACHES):
        return {message.id for check in checks for message in check(app_configs=None)}


def ids_raised_for(name: str) -> set[str]:
    """Every id some bad value of ``name`` makes the checks raise, beyond the context's."""
    baseline = raised_ids(CONTEXT)
    found = set()
    for value in BAD_VALUES:
        found |= raised_ids({**CONTEXT, name: value}) - baseline
    return found


def table_rows(page: str) -> dict[str, str]:
    """The rows of a page's tables, by their first cell's `name`."""
    return {
        match[1]: match[0]
        for match in re.finditer(r"^\| `([^`]+)` \|.*$", (DOCS / page).read_text(), re.M)
    }


def ids_naming(name: str) -> set[str]:
    """The checks whose message or hint, as written in checks.py, names the setting: those
    that only another database (PostgreSQL behind a pooler) makes raise, too."""
    source = (ROOT / "usergroups" / "checks.py").read_text()
    calls = re.findall(r"(?:Error|Warning)\((.*?)id=\"(usergroups\.[EW]\d{3})\"", source, re.S)
    return {check_id for text, check_id in calls if f"'{name}'" in text or f"[{name}" in text}


@pytest.mark.parametrize("name", sorted(SETTINGS))
def test_the_settings_row_names_the_checks_that_check_it(name):
    """docs/settings.md names, on each setting's row, every check a bad value of it raises,
    and no check that has nothing to say of it (0.3 named the origin warning W003 there;
    checks.md and the code say W004)."""
    documented = set(CHECK_ID.findall(table_rows("settings.md")[name]))
    raised = ids_raised_for(name)
    assert raised <= documented
    assert documented <= raised | ids_naming(name)


def test_the_settings_page_names_the_dict_check_the_code_raises():
    assert raised_ids([]) == {"usergroups.E007"}
    page = (DOCS / "settings.md").read_text()
    assert re.search(r"must be a dict \(`usergroups\.E007`\)", page), "settings.md: E007"


@pytest.mark.parametrize("check_id", ["usergroups.E009", "usergroups.E011"])
def test_the_checks_row_names_every_setting_it_checks(check_id):
    """A check of several settings names each on its docs/checks.md row (0.3's E002 row
    listed the known settings without the audit and webhook ones)."""
    row = table_rows("checks.md")[check_id]
    checked = [name for name in SETTINGS if check_id in ids_raised_for(name)]
    assert checked
    assert [name for name in checked if f"`{name}`" not in row] == []


def test_the_unknown_setting_row_lists_no_stale_settings():
    """The E002 row either leaves the list to docs/settings.md or gives all of it."""
    assert raised_ids({**CONTEXT, "NO_SUCH_SETTING": 1}) == {"usergroups.E002"}
    row = table_rows("checks.md")["usergroups.E002"]
    listed = set(re.findall(r"\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+\b", row)) - {"NO_SUCH_SETTING"}
    assert not listed or listed == set(SETTINGS), sorted(listed ^ set(SETTINGS))


def test_the_settings_probe_can_fail():
    """The probe sees a check that a setting's docs row would have to name."""
    assert ids_raised_for("EMBED_REQUIRE_ORIGIN") == {"usergroups.E009", "usergroups.W004"}
    assert "usergroups.E011" in ids_raised_for("WEBHOOK_ALLOW_PRIVATE")


def test_the_audit_page_names_every_revocation_axis_and_detail():
    """Each ``details`` the services record for ``embed_token.revoked`` is on audit.md's
    row: its ``axis`` values and its keys (0.3's lacked all, embed_token, jti, subtree,
    groups and exclusive)."""
    source = "".join(path.read_text() for path in (ROOT / "usergroups" / "services").glob("*.py"))
    recorded = [
        details
        for call, details in re.findall(r"(audit\.record\(.*?details=\{(.*?)\})", source, re.S)
        if "EMBED_TOKEN_REVOKED" in call
    ]
    axes = {axis for details in recorded for axis in re.findall(r'"axis": "(\w+)"', details)}
    keys = {key for details in recorded for key in re.findall(r'"(\w+)":', details)}
    assert {"user_group", "end_user", "embed_token", "all"} <= axes
    row = table_rows("audit.md")["embed_token.revoked"]
    assert [axis for axis in sorted(axes) if f'`"{axis}"`' not in row] == []
    assert [key for key in sorted(keys) if f"`{key}" not in row] == []


@pytest.mark.parametrize(
    ("operation", "test"),
    [
        ("create under a parent", "test_create_under_a_parent_costs"),
        ("move", "test_a_move_costs"),
        ("delete with `cascade`", "test_a_cascading_delete_costs"),
        ("list (a page)", "test_a_list_page_costs"),
    ],
)
def test_the_hierarchy_pages_query_bounds_are_the_tests(operation, test):
    """hierarchy.md's "What it costs" says the bounds tests/test_hierarchy.py asserts
    (0.3's said 9, 11 and 14 where the tests held 11, 13 and 17)."""
    source = (ROOT / "tests" / "test_hierarchy.py").read_text()
    body = source[source.index(f"def {test}") :]
    (bound,) = re.findall(r"django_assert_max_num_queries\((\d+)\)", body.split("\ndef ")[0])
    row = next(
        line
        for line in (DOCS / "hierarchy.md").read_text().splitlines()
        if line.startswith(f"| {operation} |")
    )
    assert f"at most {bound}" in row, row
