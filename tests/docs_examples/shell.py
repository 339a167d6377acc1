"""One bash session that runs the docs' commands in turn, as a reader's terminal would.

Variables set by one command (``OLD_KEY=$(...)``) are there for the next. Each command's
stdout and stderr come back together, as a terminal shows them; its stdin is empty, so a
command can never read the commands after it.
"""

import os
import select
import signal
import subprocess
import time
import uuid
from pathlib import Path


class Shell:
    def __init__(self, cwd: Path, env: dict[str, str]) -> None:
        self.process = subprocess.Popen(
            ["bash", "--noprofile", "--norc"],
            cwd=cwd,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def run(self, command: str, timeout: float = 120) -> str:
        """What ``command`` printed. It runs in a ``{ }`` group, so assignments stay."""
        marker = f"__docs_examples_{uuid.uuid4().hex}__".encode()
        script = f"{{\n{command}\n}} </dev/null\nprintf '\\n%s\\n' {marker.decode()}\n"
        self.process.stdin.write(script.encode())
        self.process.stdin.flush()
        end = b"\n" + marker + b"\n"
        received = b""
        deadline = time.monotonic() + timeout
        fd = self.process.stdout.fileno()
        while end not in received:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"no end of output within {timeout:.0f} s: {command!r}")
            ready, _, _ = select.select([fd], [], [], left)
            if ready:
                chunk = os.read(fd, 65536)
                if not chunk:
                    raise RuntimeError(f"bash exited while running {command!r}")
                received += chunk
        return received[: received.index(end)].decode("utf-8", errors="replace")

    def close(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            self.process.wait(timeout=10)

    def __enter__(self) -> "Shell":
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()
