"""Where placeholders sit in SQL text, as each supported database's lexer reads it.

:func:`usergroups.contrib.variables.render_sql` passes values as DB-API parameters. Drivers that
bind on the client (psycopg's default cursors, mysqlclient) write each value into the SQL
text as a quoted literal, so a placeholder that was itself inside quotes lets the value's
own quotes end the string: ``'{{ v }}'`` with ``' OR 1=1 --`` read every workspace's rows.
Inside a comment it is no better: a newline in the value ends the comment.

So a placeholder must stand where the database reads code. Databases disagree about
what quotes and comments are, and settings change it (PostgreSQL's
``standard_conforming_strings``, MySQL's ``NO_BACKSLASH_ESCAPES`` and ``ANSI_QUOTES``):
the query is scanned once per reading, and a placeholder must be code in every one. A
quote or comment left open runs to the end of the text. SQLite's ``[bracketed]`` names
are not read as quotes: PostgreSQL reads ``[`` as a subscript, and SQLite binds
parameters itself, never into the text.
"""

import re
from dataclasses import dataclass, replace
from functools import lru_cache

WORD = re.compile(r"[^\W\d][\w$]*")
DOLLAR_TAG = re.compile(r"\$(?:[^\W\d]\w*)?\$")
# MySQL reads "--" as a comment only before whitespace or a control character.
MYSQL_DASH_COMMENT = re.compile(r"--(?:[\x00-\x20\x7f]|\Z)")


@dataclass(frozen=True)
class Dialect:
    """How one database (with one setting) reads strings, quoted names and comments."""

    name: str
    backslash_in_single: bool = False  # '\'' escapes a quote
    backslash_in_double: bool = False  # "\"" escapes a quote
    backticks: bool = False  # `name`
    escape_strings: bool = False  # E'...' takes backslash escapes (PostgreSQL)
    dollar_quotes: bool = False  # $$...$$ and $tag$...$tag$ (PostgreSQL)
    hash_comments: bool = False  # "#" to the end of the line (MySQL)
    dash_comment_needs_space: bool = False  # "-- " but not "--x" (MySQL)
    nested_comments: bool = False  # /* /* */ */ (PostgreSQL)
    line_ends: str = "\n"
    executable_comments: bool = False  # /*! ... */ is code, or not, by server version


POSTGRESQL = Dialect(
    "PostgreSQL",
    escape_strings=True,
    dollar_quotes=True,
    nested_comments=True,
    line_ends="\n\r",
)
MYSQL = Dialect(
    "MySQL/MariaDB",
    backslash_in_single=True,
    backslash_in_double=True,
    backticks=True,
    hash_comments=True,
    dash_comment_needs_space=True,
    executable_comments=True,
)
DIALECTS = (
    POSTGRESQL,
    replace(
        POSTGRESQL,
        name="PostgreSQL with standard_conforming_strings off",
        backslash_in_single=True,
    ),
    MYSQL,
    replace(
        MYSQL,
        name="MySQL/MariaDB with NO_BACKSLASH_ESCAPES",
        backslash_in_single=False,
        backslash_in_double=False,
    ),
    replace(MYSQL, name="MySQL/MariaDB with ANSI_QUOTES", backslash_in_double=False),
    Dialect("SQLite", backticks=True),
)


def _end_of_quoted(query: str, start: int, backslash: bool) -> int:
    """End of the quoted text opening at ``start``; a doubled quote stays inside."""
    quote, index, length = query[start], start + 1, len(query)
    while index < length:
        char = query[index]
        if backslash and char == "\\":
            index += 2
        elif char == quote:
            if query.startswith(quote, index + 1):
                index += 2
            else:
                return index + 1
        else:
            index += 1
    return length


def _end_of_line(query: str, start: int, line_ends: str) -> int:
    ends = [found for end in line_ends if (found := query.find(end, start)) >= 0]
    return min(ends) if ends else len(query)


def _end_of_block_comment(query: str, start: int, nested: bool) -> int:
    if not nested:
        end = query.find("*/", start + 2)
        return len(query) if end < 0 else end + 2
    depth, index = 1, start + 2
    while index < len(query) and depth:
        if query.startswith("/*", index):
            depth, index = depth + 1, index + 2
        elif query.startswith("*/", index):
            depth, index = depth - 1, index + 2
        else:
            index += 1
    return index


class ExecutableComment(ValueError):
    """MySQL runs ``/*! ... */`` as code or skips it, by server version: unreadable."""


def _end_of_literal(query: str, index: int, dialect: Dialect) -> int | None:
    """Where the string, quoted name or comment opening at ``index`` ends; None if
    none opens there."""
    char = query[index]
    if char == "'":
        return _end_of_quoted(query, index, dialect.backslash_in_single)
    if char == '"':
        return _end_of_quoted(query, index, dialect.backslash_in_double)
    if char == "`" and dialect.backticks:
        return _end_of_quoted(query, index, False)
    if char == "$" and dialect.dollar_quotes:
        tag = DOLLAR_TAG.match(query, index)
        if tag:
            end = query.find(tag.group(), tag.end())
            return len(query) if end < 0 else end + len(tag.group())
        return None
    if char == "-" and query.startswith("--", index):
        if not dialect.dash_comment_needs_space or MYSQL_DASH_COMMENT.match(query, index):
            return _end_of_line(query, index, dialect.line_ends)
        return None
    if char == "#" and dialect.hash_comments:
        return _end_of_line(query, index, dialect.line_ends)
    if char == "/" and query.startswith("/*", index):
        if dialect.executable_comments and query.startswith(("/*!", "/*M!"), index):
            raise ExecutableComment
        return _end_of_block_comment(query, index, dialect.nested_comments)
    return None


def _placeholders_in_code(query: str, placeholder: re.Pattern[str], dialect: Dialect) -> set[int]:
    """Start offsets of the placeholders that ``dialect`` reads as code."""
    found, index, length = set(), 0, len(query)
    while index < length:
        if query[index] == "{" and (match := placeholder.match(query, index)):
            found.add(index)
            index = match.end()
            continue
        word = WORD.match(query, index)
        if word:
            index = word.end()
            if (
                dialect.escape_strings
                and word.group() in ("e", "E")
                and query.startswith("'", index)
            ):
                index = _end_of_quoted(query, index, True)
            continue
        end = _end_of_literal(query, index, dialect)
        index = index + 1 if end is None else end
    return found


@lru_cache(maxsize=512)
def _misplaced(query: str, placeholder: re.Pattern[str]) -> str | None:
    every = {match.start(): match.group() for match in placeholder.finditer(query)}
    for dialect in DIALECTS:
        try:
            outside = set(every) - _placeholders_in_code(query, placeholder, dialect)
        except ExecutableComment:
            return (
                "The query has a /*! ... */ comment, which MySQL runs or skips by "
                "server version; placeholders cannot be placed safely around it."
            )
        if outside:
            return (
                f"{every[min(outside)]} is inside quotes or a comment as {dialect.name} "
                "reads the query; write placeholders bare (region = {{ region }}), never "
                "in quotes."
            )
    return None


def misplaced_placeholder(query: str, placeholder: re.Pattern[str]) -> str | None:
    """Why a placeholder of ``query`` is not code for every database; None if all are.

    Cached per query: a host's queries are few and fixed, their values vary.
    """
    if not placeholder.search(query):
        return None
    return _misplaced(query, placeholder)
