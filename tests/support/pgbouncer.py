"""PgBouncer (Debian's package) in transaction pooling mode in front of one database.

Transaction mode hands a server connection to a client for one transaction only, so
anything that outlives a transaction on the server (a ``WITH HOLD`` cursor, a prepared
statement, a session ``SET``) may be gone, or someone else's, at the next one. That is
what Django must be told about (docs/deployment.md); this harness runs the real thing so
the cluster tests find out whether it was.

Started in the foreground, with its log on stderr into ``pgbouncer.log``; by root as the
``postgres`` system user (PgBouncer refuses to run as root), by anyone else as themselves.
"""

import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

from tests.support.gunicorn import kill_group

CONFIG = """\
[databases]
{database} = host={pg_host} port={pg_port} dbname={database}

[pgbouncer]
listen_addr = {listen}
listen_port = {port}
unix_socket_dir =
auth_type = trust
auth_file = {auth_file}
admin_users = postgres
pool_mode = transaction
default_pool_size = 10
max_client_conn = 500
ignore_startup_parameters = extra_float_digits
logfile =
"""
RUN_AS = "postgres"


class PgBouncer:
    """PgBouncer for ``database`` at ``pg_host:pg_port``, listening on ``listen`` (comma-
    separated addresses) at ``port``. Run by root, ``workdir`` must be one the ``postgres``
    user can reach (made by ``tempfile.mkdtemp``; pytest's ``tmp_path`` is under a private
    folder)."""

    def __init__(
        self, workdir: Path, database: str, listen: str, port: int, pg: tuple[str, int]
    ) -> None:
        self.workdir = workdir / "pgbouncer"
        self.workdir.mkdir(exist_ok=True)
        self.port, self.address = port, listen.split(",")[0]
        (self.workdir / "userlist.txt").write_text(f'"{RUN_AS}" ""\n')
        self.config = self.workdir / "pgbouncer.ini"
        self.config.write_text(
            CONFIG.format(
                database=database,
                pg_host=pg[0],
                pg_port=pg[1],
                listen=listen,
                port=port,
                auth_file=self.workdir / "userlist.txt",
            )
        )
        self.as_root = os.geteuid() == 0
        if self.as_root:  # readable by the user PgBouncer runs as
            shutil.chown(self.workdir, RUN_AS)
            for path in self.workdir.iterdir():
                shutil.chown(path, RUN_AS)
            os.chmod(workdir, 0o755)
        self.log_path = workdir / "pgbouncer.log"
        self.process: subprocess.Popen[bytes] | None = None
        self.restarts = 0

    def url(self, database: str, host: str = "") -> str:
        """The Django ``DATABASE_URL`` of ``database`` through PgBouncer, at ``host`` (one of
        the listening addresses; the first by default)."""
        return f"postgres://{RUN_AS}@{host or self.address}:{self.port}/{database}"

    def start(self, timeout: float = 15) -> "PgBouncer":
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(
                ["pgbouncer", *(["-u", RUN_AS] if self.as_root else []), str(self.config)],
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                break
            try:
                socket.create_connection((self.address, self.port), timeout=1).close()
                return self
            except OSError:
                time.sleep(0.05)
        raise RuntimeError(f"PgBouncer did not start:\n{self.log_path.read_text()[-2000:]}")

    def stop(self, sig: int = signal.SIGTERM) -> None:
        """SIGTERM: PgBouncer (1.18) closes every client and server connection at once."""
        if self.process is None or self.process.poll() is not None:
            return
        kill_group(self.process.pid, sig)
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            kill_group(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=10)

    def restart(self) -> None:
        """Stop and start again on the same port, as a service restart does."""
        self.stop()
        self.start()
        self.restarts += 1
