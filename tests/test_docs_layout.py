"""What a reader sees of the docs at 1280 px: a console command wider than a code block
there (about 80 characters) hides behind horizontal scrolling, so commands are wrapped
with ``\\`` between their options; only one option's own argument (a JSON body, a
script) may run longer. Flow diagrams are Mermaid, drawn to the page's width."""

import re

import pytest

from tests.support import ROOT

WIDTH = 80
PAGES = sorted((ROOT / "docs").glob("*.md"))
BLOCK = re.compile(r"^```(\w*)\n(.*?)^```", re.M | re.S)
# One option and its single- or double-quoted argument (or a quoted URL) alone on a line,
# perhaps after a pipe, perhaps closing a "$(".
ONE_ARGUMENT = re.compile(
    r"""^\s+(?:\| \S+ )?(?:-{1,2}[\w-]+ )?('[^']*'|"(?:[^"\\]|\\.)*")\)?( \\)?$"""
)


def command_lines(text: str) -> list[str]:
    lines = []
    for block in BLOCK.finditer(text):
        if block[1] != "console":
            continue
        continued = False
        for line in block[2].split("\n"):
            if line.startswith("$ ") or continued:
                lines.append(line)
            continued = line.endswith("\\")
    return lines


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_commands_are_wrapped_to_the_code_block(page):
    too_wide = [
        line
        for line in command_lines(page.read_text())
        if len(line) > WIDTH and not ONE_ARGUMENT.match(line)
    ]
    assert too_wide == []


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_no_ascii_flow_diagram(page):
    arrows = [
        block[0][:80]
        for block in BLOCK.finditer(page.read_text())
        if block[1] == "text" and re.search(r"-{4,}>|<-{4,}", block[2])
    ]
    assert arrows == []


def test_the_wrap_check_can_fail():
    long = '$ curl -sS -i -X GET "$URL" -H "Authorization: Token $API_KEY" -H \'Content-Type: application/json\''
    assert len(long) > WIDTH and not ONE_ARGUMENT.match(long)
    assert ONE_ARGUMENT.match("    -d '" + "x" * 90 + "' \\")
