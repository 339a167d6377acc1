"""gunicorn config for the memory mode: each worker keeps a count of the requests it served
in ``$BENCH_COUNT_DIR/requests-<pid>``, so RSS can be reported against it."""

import os

_served = 0
_fd = None


def post_request(worker, req, environ, resp):
    global _served, _fd
    _served += 1
    if _fd is None:
        path = os.path.join(os.environ["BENCH_COUNT_DIR"], f"requests-{os.getpid()}")
        _fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.pwrite(_fd, b"%12d" % _served, 0)
