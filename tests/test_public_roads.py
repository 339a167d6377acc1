"""The app stays on the frameworks' public roads (issue 20): no private internals of
Django, DRF or psycopg. ruff's SLF001 catches most private access in `make lint`; this
catches the attributes that are not underscored or that ruff lets through."""

import ast
from pathlib import Path

import pytest

import usergroups

APP = Path(usergroups.__file__).parent
#: Framework internals the app once reached into, each a past outage or a silent break.
FORBIDDEN_ATTRIBUTES = {"health_check_done", "_load_stream", "_state", "_query"}


def app_sources() -> list[Path]:
    return sorted(p for p in APP.rglob("*.py") if "migrations" not in p.parts)


def violations(tree: ast.AST) -> list[str]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in FORBIDDEN_ATTRIBUTES:
            found.append(f"line {node.lineno}: .{node.attr}")
        if isinstance(node, ast.Constant) and node.value in FORBIDDEN_ATTRIBUTES:
            found.append(f"line {node.lineno}: {node.value!r} (getattr/setattr by name)")
        if isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Attribute) and target.attr == "cursor":
                    found.append(f"line {node.lineno}: assigns a cursor's .cursor")
    return found


@pytest.mark.parametrize("path", app_sources(), ids=lambda p: str(p.relative_to(APP)))
def test_no_framework_internals(path: Path) -> None:
    assert violations(ast.parse(path.read_text(), str(path))) == []


@pytest.mark.parametrize(
    "source",
    [
        "connection.health_check_done = True",
        "self._load_stream()",
        "group._state.adding = False",
        "cursor._query = q",
        "wrapper.cursor = prepared",
        "getattr(connection, 'health_check_done', True)",
    ],
)
def test_the_check_finds_each_internal(source: str) -> None:
    assert violations(ast.parse(source))


@pytest.mark.parametrize("path", app_sources(), ids=lambda p: str(p.relative_to(APP)))
def test_no_per_line_ignore_of_private_access(path: Path) -> None:
    """SLF001 holds for the whole app: no line may opt out of it."""
    assert "SLF001" not in path.read_text()
