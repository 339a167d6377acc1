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


def current() -> tuple[int, int]:
    major, minor = re.match(r"(\d+)\.(\d+)", usergroups.__version__).groups()
    return int(major), int(minor)


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
