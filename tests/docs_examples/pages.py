"""The docs' pages in nav order, their console blocks, and writing outputs back."""

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import yaml

FENCE_CLOSE = "```"
PROMPT = "$ "
DIRECTIVE = re.compile(r"<!--\s*docs-examples:\s*server\s+(\{.*\})\s*-->")


@dataclass
class Example:
    """One ``$ `` command of a console block (continuation lines included) and the
    output the docs show under it."""

    page: Path
    line: int  # of the "$ ", 1-based
    command_lines: list[str]  # as written, the prompt taken off the first
    output_lines: list[str]
    blank_after: int = 0  # blank lines between this output and the next command

    @property
    def command(self) -> str:
        return "\n".join(self.command_lines)

    @property
    def output(self) -> str:
        return "\n".join(self.output_lines)

    @property
    def where(self) -> str:
        return f"{self.page.name}:{self.line}"

    def lines(self) -> list[str]:
        return [
            PROMPT + self.command_lines[0],
            *self.command_lines[1:],
            *self.output_lines,
            *[""] * self.blank_after,
        ]


@dataclass
class ConsoleBlock:
    page: Path
    first: int  # index of the first line inside the fence
    end: int  # index of the closing fence
    server: dict | None  # the directive before the block, if any
    examples: list[Example] = field(default_factory=list)

    def lines(self) -> list[str]:
        return [line for example in self.examples for line in example.lines()]


class _ConfigLoader(yaml.SafeLoader):
    """mkdocs.yml as data: a ``!!python/name:`` tag (a Markdown extension's function)
    is read as its name, never imported."""


_ConfigLoader.add_multi_constructor(
    "tag:yaml.org,2002:python/name:", lambda loader, suffix, node: suffix
)


def nav_pages(mkdocs_yml: Path) -> list[Path]:
    """The Markdown files of the nav, in order."""
    config = yaml.load(mkdocs_yml.read_text(encoding="utf-8"), Loader=_ConfigLoader)
    docs_dir = mkdocs_yml.parent / config.get("docs_dir", "docs")
    found: list[Path] = []

    def walk(entry) -> None:
        if isinstance(entry, str):
            if entry.endswith(".md"):
                found.append(docs_dir / entry)
        elif isinstance(entry, list):
            for item in entry:
                walk(item)
        elif isinstance(entry, dict):
            for value in entry.values():
                walk(value)

    walk(config["nav"])
    return found


def _directive(lines: list[str], fence: int, page: Path) -> dict | None:
    before = fence - 1
    while before >= 0 and not lines[before].strip():
        before -= 1
    if before < 0 or "docs-examples" not in lines[before]:
        return None
    match = DIRECTIVE.fullmatch(lines[before].strip())
    if match is None:
        raise ValueError(f"{page.name}:{before + 1}: not a docs-examples directive")
    server = json.loads(match.group(1))
    if not set(server) <= {"USERGROUPS", "env"}:
        raise ValueError(f"{page.name}:{before + 1}: a server directive takes USERGROUPS, env")
    return server


def _examples(page: Path, lines: list[str], first: int, end: int) -> list[Example]:
    if first < end and not lines[first].startswith(PROMPT):
        raise ValueError(f"{page.name}:{first + 1}: a console block starts with '$ '")
    examples: list[Example] = []
    index = first
    while index < end:  # here lines[index] is a command: outputs run up to the next
        command = [lines[index][len(PROMPT) :]]
        start = index
        while command[-1].endswith("\\") and index + 1 < end:
            index += 1
            command.append(lines[index])
        index += 1
        output = []
        while index < end and not lines[index].startswith(PROMPT):
            output.append(lines[index])
            index += 1
        blank = 0
        while output and not output[-1].strip():
            output.pop()
            blank += 1
        examples.append(Example(page, start + 1, command, output, blank))
    return examples


def _fences(page: Path, lines: list[str], language: str) -> Iterator[tuple[int, int]]:
    """(opening, closing) line indexes of each ```language block, not indented."""
    index = 0
    while index < len(lines):
        if lines[index].strip() == f"```{language}":
            if lines[index] != f"```{language}":
                raise ValueError(f"{page.name}:{index + 1}: {language} blocks are not indented")
            end = index + 1
            while end < len(lines) and lines[end] != FENCE_CLOSE:
                end += 1
            if end == len(lines):
                raise ValueError(f"{page.name}:{index + 1}: the {language} block is not closed")
            yield index, end
            index = end
        index += 1


def console_blocks(page: Path) -> list[ConsoleBlock]:
    lines = page.read_text(encoding="utf-8").split("\n")
    blocks = []
    for index, end in _fences(page, lines, "console"):
        block = ConsoleBlock(page, index + 1, end, _directive(lines, index, page))
        block.examples = _examples(page, lines, index + 1, end)
        blocks.append(block)
    return blocks


def fenced_blocks(page: Path, language: str) -> list[str]:
    """The text of each ```language block of the page (e.g. the host's code that a browser
    test runs as written)."""
    lines = page.read_text(encoding="utf-8").split("\n")
    return [
        "\n".join(lines[index + 1 : end]) + "\n" for index, end in _fences(page, lines, language)
    ]


def write_back(page: Path, blocks: list[ConsoleBlock]) -> bool:
    """Write the blocks' examples (as they are now) into the page; True if it changed."""
    text = page.read_text(encoding="utf-8")
    lines = text.split("\n")
    for block in sorted(blocks, key=lambda block: block.first, reverse=True):
        lines[block.first : block.end] = block.lines()
    new = "\n".join(lines)
    if new != text:
        page.write_text(new, encoding="utf-8")
    return new != text
