"""The app's embed.js as a package ships it: small, found by staticfiles (so
``collectstatic`` gathers it and a site serves it), in the wheel's package data, and
typed by the embed.d.ts beside it. Its behaviour in a browser:
tests/e2e/test_embed_script_browser.py."""

import re
import tomllib

from django.contrib.staticfiles import finders

from tests.support import ROOT

PACKAGE = ROOT / "usergroups"
SCRIPT = PACKAGE / "static" / "usergroups" / "embed.js"
TYPES = SCRIPT.with_suffix(".d.ts")
EXPORTED = re.compile(r"^export (?:async )?(?:function|const) (\w+)", re.M)


def test_the_script_is_under_7_kib_unminified():
    assert len(SCRIPT.read_bytes()) < 7 * 1024


def test_staticfiles_finds_the_script_and_its_types_in_the_app():
    assert finders.find("usergroups/embed.js") == str(SCRIPT)
    assert finders.find("usergroups/embed.d.ts") == str(TYPES)


def test_the_package_data_of_the_wheel_holds_them():
    patterns = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"][
        "package-data"
    ]["usergroups"]
    shipped = {path for pattern in patterns for path in PACKAGE.glob(pattern)}
    assert {SCRIPT, TYPES} <= shipped


def test_the_types_declare_exactly_what_the_script_exports():
    exported = EXPORTED.findall(SCRIPT.read_text())
    assert sorted(exported) == ["ENDED", "VERSION", "claimsOf", "connect", "serveTokens"]
    assert sorted(EXPORTED.findall(TYPES.read_text())) == sorted(exported)


def test_the_script_imports_nothing():
    assert not re.search(r"^\s*import\b|\bimport\(|\brequire\(", SCRIPT.read_text(), re.M)
