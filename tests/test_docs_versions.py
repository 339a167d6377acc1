"""No page of the docs (nor the README) names as future a version this one has reached:
"Coming in 0.2" on the home page of 0.2 told a new user that what they had installed
did not exist. A page may name a future version that is still ahead."""

import re

import pytest

import usergroups
from tests.support import ROOT

PAGES = sorted((ROOT / "docs").glob("*.md")) + [ROOT / "README.md"]
_V = r"(?:version |release )?v?(\d+)\.(\d+)"
#: Phrases that put a named version in the future.
FUTURE = [
    re.compile(rf"\bcoming in {_V}", re.I),
    re.compile(rf"\b(?:planned|scheduled|expected|specified|due) (?:for|in) {_V}", re.I),
    re.compile(
        rf"\b(?:arrives?|lands?|ships?|will (?:be )?(?:added|available|come)) in {_V}", re.I
    ),
    re.compile(rf"\b(?:removed|go(?:es)? away|dropped) in {_V}", re.I),
    re.compile(rf"\b(?:not yet|not until) (?:in )?{_V}", re.I),
]
#: A future with no version named cannot be checked: a page names the version.
VAGUE = re.compile(
    r"\b(?:a later|the next|a future|an upcoming) (?:version|release)\b"
    r"|\bnot in this (?:one|version|release)\b",
    re.I,
)


def stated() -> tuple[int, int]:
    """The major and minor version the package states."""
    major, minor = re.match(r"(\d+)\.(\d+)", usergroups.__version__).groups()
    return int(major), int(minor)


def current() -> tuple[int, int]:
    """The version reached: the stated one, or the one before it while the stated one is a
    development or pre-release (0.5.0.dev0: what is "in 0.5" is still ahead)."""
    major, minor = stated()
    if re.search(r"(dev|a|b|rc)\d*$", usergroups.__version__):
        return major, minor - 1
    return major, minor


def stale_claims(text: str, version: tuple[int, int]) -> list[str]:
    """The phrases of ``text`` that name as future a version at or below ``version``,
    or a future without a version. Lines are joined first: a phrase may wrap."""
    flat = re.sub(r"\s+", " ", text)
    found = [
        match[0]
        for pattern in FUTURE
        for match in pattern.finditer(flat)
        if (int(match[1]), int(match[2])) <= version
    ]
    return found + [match[0] for match in VAGUE.finditer(flat)]


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_no_page_names_a_reached_version_as_future(page):
    assert stale_claims(page.read_text(), current()) == []


@pytest.mark.parametrize(
    "sentence",
    [
        '!!! note "Coming in 0.2"\n    Group hierarchy and short-lived signed embed tokens',
        "specified for the next\nversion and are not in this one",
        "| minting embed tokens (a later version) | `embed` |",
        "The old modules go away in\n0.2.",
    ],
)
def test_the_stale_sentences_of_0_2_are_caught(sentence):
    assert stale_claims(sentence, (0, 2)) != []


def test_a_version_still_ahead_may_be_named():
    assert stale_claims("keep working in 0.3 and go away in 0.4", (0, 3)) == []
    assert stale_claims("go away in 0.4", (0, 4)) == ["go away in 0.4"]


# The version, the changelog and the upgrading page say the same --------------------------

CHANGELOG = (ROOT / "CHANGELOG.md").read_text()
SECTION = re.compile(r"^## \[(\d+)\.(\d+)\.(\d+)\](.*)$", re.M)


def test_the_changelogs_top_section_is_this_version_and_only_it_is_unreleased():
    """0.3's wheel said 0.2.0 while the changelog described 0.3: the top section is the
    version the package states, and the only one still "Unreleased"."""
    sections = SECTION.findall(CHANGELOG)
    (major, minor, patch, rest), *older = sections
    stated = re.match(r"(\d+)\.(\d+)\.(\d+)", usergroups.__version__).groups()
    assert (major, minor, patch) == stated
    assert "Unreleased" in rest or not re.search(r"(dev|a|b|rc)\d*$", usergroups.__version__)
    assert [section for section in older if "Unreleased" in section[3]] == []
    versions = [tuple(map(int, section[:3])) for section in sections]
    assert versions == sorted(versions, reverse=True)
    for version in sections:
        assert f"[{'.'.join(version[:3])}]: https://" in CHANGELOG  # its link


def test_the_upgrading_page_reaches_this_version():
    page = (ROOT / "docs" / "upgrading.md").read_text()
    steps = re.findall(r"^## From (\d+)\.(\d+) to (\d+)\.(\d+)$", page, re.M)
    assert steps and (int(steps[-1][2]), int(steps[-1][3])) == stated()


def test_the_wheel_states_the_version():
    """pyproject.toml reads the version from usergroups.__version__ (one place)."""
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert 'version = { attr = "usergroups.__version__" }' in pyproject
    assert re.search(r'^dynamic = \["version"\]', pyproject, re.M)
    assert not re.search(r'^version = "', pyproject, re.M)


# README's lists are the docs' pages and the app's commands ----------------------------------


def test_readme_lists_every_page_of_the_docs():
    """0.3's README left out End users, Audit trail and Webhooks."""
    readme = (ROOT / "README.md").read_text()
    linked = set(re.findall(r"\]\(docs/([\w-]+\.md)(?:#[\w-]+)?\)", readme))
    pages = {page.name for page in (ROOT / "docs").glob("*.md")}
    assert pages - linked == set()


def test_readme_and_commands_page_name_every_management_command():
    """0.3's README named 4 of the app's 8 commands."""
    commands = sorted(
        path.stem
        for path in (ROOT / "usergroups" / "management" / "commands").glob("*.py")
        if not path.name.startswith("_")
    )
    assert len(commands) >= 8
    readme = (ROOT / "README.md").read_text()
    page = (ROOT / "docs" / "commands.md").read_text()
    assert [name for name in commands if f"`{name}`" not in readme] == []
    assert [name for name in commands if f"\n## {name}\n" not in page] == []
