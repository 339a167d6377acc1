"""gunicorn's configuration for the example project: ``gunicorn -c
example_project/gunicorn.conf.py example_project.wsgi``. Only the hooks that metrics
need (``DJANGO_METRICS=true``, example_project/metrics.py); without it they do nothing.

prometheus_client's multiprocess directory must be empty when the server starts and
hears of each worker's death: ``PROMETHEUS_MULTIPROC_DIR``, or a temporary directory
made here (and removed at exit) when it is unset. The workers, forked after, inherit it.
"""

import glob
import os
import shutil
import tempfile

import environ

_metrics_on = environ.Env().bool("DJANGO_METRICS", default=False)
_made_directory = None


def on_starting(server):
    global _made_directory
    if not _metrics_on:
        return
    directory = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
    if not directory:
        directory = _made_directory = tempfile.mkdtemp(prefix="prometheus-multiproc-")
        os.environ["PROMETHEUS_MULTIPROC_DIR"] = directory
    for path in glob.glob(os.path.join(directory, "*.db")):  # the last run's counts
        os.remove(path)


def child_exit(server, worker):
    if _metrics_on:
        from prometheus_client import multiprocess

        # A worker killed or timed out: its gauges go; what it counted stays counted.
        multiprocess.mark_process_dead(worker.pid)


def on_exit(server):
    if _made_directory:
        shutil.rmtree(_made_directory, ignore_errors=True)
