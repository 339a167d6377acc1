"""A logging handler that keeps every record holding an API key, a group token or an
embed token.

tests/conftest.py attaches one to every logger for the whole run; tests/test_log_guard.py
shows that one can fail.
"""

import logging

import pytest

from tests.support.leaks import secrets_in


class SecretLogGuard(logging.Handler):
    """Formats every record it is handed (message, traceback, stack) and keeps those
    that hold a secret. Only leaks are kept: the run logs thousands of records."""

    def __init__(self) -> None:
        super().__init__(level=logging.DEBUG)
        self.setFormatter(logging.Formatter("%(name)s %(levelname)s %(message)s"))
        self.checked = 0
        self.leaks: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        try:
            text = self.format(record)
        except Exception:  # a record whose args do not fit its message
            text = f"{record.msg!r} {record.args!r}"
        self.checked += 1
        found = secrets_in(text)
        if found:
            # Named, not shown: the report of a leak must not repeat it.
            shown = text.splitlines()[0]
            for secret in found:
                shown = shown.replace(secret, secret[:8] + "…")
            self.leaks.append(f"{record.name} ({record.pathname}:{record.lineno}): {shown}")

    def check(self) -> None:
        if self.leaks:
            pytest.fail(
                f"{len(self.leaks)} of {self.checked} log records held an API key, a group "
                "token or an embed token:\n" + "\n".join(self.leaks[:20]),
                pytrace=False,
            )
