"""Outputs as the docs show them, and the values a run makes anew, matched one to one."""

import re
from collections import defaultdict

# Shown whenever the server sends them, whether or not the docs list them: they are part
# of what the answer means (how to authenticate, how long to wait). ``Allow``, which DRF
# sends on every answer, means something on a 405.
ALWAYS_SHOWN = ("WWW-Authenticate", "Retry-After")
SHOWN_ON_405 = ("Allow",)

STATUS_LINE = re.compile(r"HTTP/[\d.]+ \d{3}\b.*")
INFORMATIONAL = re.compile(r"HTTP/[\d.]+ 1\d\d\b")
HEADER_LINE = re.compile(r"([A-Za-z0-9-]+): (.*)")

# What a run makes anew. A key prefix is a key's first 12 characters, alone. An embed
# token is a JWT: three base64url parts, the first two JSON objects ("eyJ" is '{"').
VALUES = re.compile(
    r"(?P<embed_token>eyJ[A-Za-z0-9_-]*\.eyJ[A-Za-z0-9_-]*\.[A-Za-z0-9_-]+)(?![A-Za-z0-9_-])"
    r"|(?P<key>ugk_[A-Za-z0-9_-]{43})(?![A-Za-z0-9_-])"
    r"|(?P<prefix>ugk_[A-Za-z0-9_-]{8})(?![A-Za-z0-9_-])"
    r"|(?P<token>ugt_[A-Za-z0-9_-]{43})(?![A-Za-z0-9_-])"
    r"|(?P<timestamp>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d))"
)
# How long a throttled client must wait depends on the clock: any count will do.
SECONDS = re.compile(r"(?<=Retry-After: )\d+|(?<=available in )\d+(?= seconds?\b)")


def plain(text: str) -> str:
    """Text as a terminal shows it: LF line ends, no trailing blanks or blank lines."""
    lines = [line.rstrip() for line in text.replace("\r\n", "\n").split("\n")]
    return "\n".join(lines).strip("\n")


def http_answer(text: str) -> tuple[str, list[tuple[str, str]], str] | None:
    """(status line, headers, body) of what ``curl -i`` printed, or None if not that.
    An interim ``100 Continue`` answer is passed over."""
    text = text.replace("\r\n", "\n")
    while STATUS_LINE.match(text):
        head, _, rest = text.partition("\n\n")
        lines = head.split("\n")
        if INFORMATIONAL.match(lines[0]) and STATUS_LINE.match(rest):
            text = rest
            continue
        headers = [match.groups() for match in map(HEADER_LINE.fullmatch, lines[1:]) if match]
        return lines[0], headers, rest
    return None


def shown_headers(docs_output: str) -> set[str]:
    """Names (lower case) of the headers the docs show under a status line."""
    lines = docs_output.split("\n")
    if not STATUS_LINE.fullmatch(lines[0]):
        return set()
    names = set()
    for line in lines[1:]:
        match = HEADER_LINE.fullmatch(line)
        if match is None:
            break
        names.add(match.group(1).lower())
    return names


def as_shown(run_output: str, headers: set[str]) -> str:
    """What the run printed, as the docs show it: for an HTTP answer the status line,
    the ``headers`` named (and those always shown) and the body; else the text."""
    answer = http_answer(run_output)
    if answer is None:
        return plain(run_output)
    status, sent, body = answer
    always = ALWAYS_SHOWN + (SHOWN_ON_405 if status.split()[1:2] == ["405"] else ())
    wanted = {name.lower() for name in (*headers, *always)}
    lines = [status, *(f"{name}: {value}" for name, value in sent if name.lower() in wanted)]
    return plain("\n".join([*lines, body]))


def skeleton(text: str) -> str:
    """``text`` with each value a run makes anew replaced by its kind."""
    return SECONDS.sub("<seconds>", VALUES.sub(lambda match: f"<{match.lastgroup}>", text))


def _by_kind(text: str) -> dict[str, list[str]]:
    found = defaultdict(list)
    for match in VALUES.finditer(text):
        found[match.lastgroup].append(match.group())
    return found


class Values:
    """The values the docs show, each paired with the one the run made at that place.

    A pair holds for the whole run: the docs must show one value where the run gave one
    value, and another where it gave another.
    """

    def __init__(self) -> None:
        self.run_of: dict[str, str] = {}  # as the docs show it -> as the run made it
        self.docs_of: dict[str, str] = {}  # the reverse

    def _pairs(self, docs_text: str, run_text: str) -> list[tuple[str, str]]:
        # By kind, in order; when the counts differ, the output differs anyway.
        docs, run = _by_kind(docs_text), _by_kind(run_text)
        return [pair for kind in docs for pair in zip(docs[kind], run.get(kind, []), strict=False)]

    def compare(self, docs_text: str, run_text: str) -> list[str]:
        """Why the docs do not show what the run gave (nothing if they do). Pairs the
        values seen for the first time, even when something else differs, so that the
        commands after this one still run with the run's values."""
        problems = []
        if skeleton(docs_text) != skeleton(run_text):
            problems.append("the output differs")
        for shown, made in self._pairs(docs_text, run_text):
            known_made, known_shown = self.run_of.get(shown), self.docs_of.get(made)
            if known_made is None and known_shown is None:
                self.run_of[shown], self.docs_of[made] = made, shown
            elif known_made != made:
                problem = f"the docs show {shown} where the run gave "
                if known_shown is not None:
                    problem += f"the value the docs showed above as {known_shown}"
                else:
                    problem += "a value new here"
                if known_made is not None:
                    problem += f"; above, {shown} stood for another value"
                problems.append(problem)
        return problems

    def learn(self, docs_text: str, run_text: str) -> None:
        """For rewriting: each value the docs showed here stands for the run's from now on."""
        for shown, made in self._pairs(docs_text, run_text):
            self.run_of[shown], self.docs_of[made] = made, shown

    def as_docs_would(self, run_text: str) -> str:
        """The run's text with each value paired above written as the docs show it: what
        the docs should say here, for a diff that shows only what really differs."""
        return VALUES.sub(lambda match: self.docs_of.get(match.group(), match.group()), run_text)

    def in_command(self, command: str) -> str:
        """The command with each value the docs showed above replaced by the run's.
        A value never shown (an example of an unknown token) is sent as written."""
        return VALUES.sub(lambda match: self.run_of.get(match.group(), match.group()), command)
