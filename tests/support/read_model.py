"""This process's read model, as the tests wait for it."""

import time

from usergroups import read_model


def until_trusted(seconds: float = 5) -> bool:
    """Start this process's listener if it has not started, and wait (at most
    ``seconds``) until it trusts memory, as a server's does once it has heard its first
    beat; whether it does."""
    listener = read_model.process_listener()
    deadline = time.monotonic() + seconds
    while not listener.trusted() and time.monotonic() < deadline:
        time.sleep(0.01)
    return listener.trusted()
