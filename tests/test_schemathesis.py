"""``schemathesis run --checks all`` as a newcomer runs it: the repository's
``schemathesis.toml`` (what no schema can state) and nothing else, no hooks, against the
example project under gunicorn on SQLite. Every check passes, with any seed (issue 33:
a newcomer's run found the schema's own faults and 400s for valid-looking data).

tests/test_fuzz.py runs schemathesis harder, with hooks that make its valid data meet
those rules; this is the run a site's developer repeats. The seed is random (one a
run: every CI run tries another) unless ``USERGROUPS_SCHEMATHESIS_SEEDS`` names them
(comma-separated, a run each); a failure names its seed, to repeat it.

gunicorn runs with ``--limit-request-line 0``, as in tests/test_fuzz.py: a query string's
JSON text may be long, and gunicorn's own 414 (HTML) belongs to the front end.
"""

import os
import random
import re

import pytest

from tests.support import ROOT
from tests.support.deployment import migrated_site
from tests.support.gunicorn import Gunicorn
from tests.support.schemathesis_cli import run_schemathesis

pytestmark = [pytest.mark.live, pytest.mark.slow]

CONFIG = ROOT / "schemathesis.toml"
#: Examples per operation and phase: enough for every rule of the schema to be met.
EXAMPLES = 30


#: Seeds named to repeat runs; else one run, with a seed of its own (drawn in the test, so
#: that pytest-xdist's workers collect the same tests).
NAMED_SEEDS = [
    int(seed) for seed in os.environ.get("USERGROUPS_SCHEMATHESIS_SEEDS", "").split(",") if seed
]


def seed_of(run: int) -> int:
    return NAMED_SEEDS[run] if run < len(NAMED_SEEDS) else random.randrange(2**64)


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("schemathesis")
    env, key = migrated_site(f"sqlite:///{tmp / 'db.sqlite3'}", "newcomer")
    with Gunicorn(env, tmp / "gunicorn.log", 2, "--limit-request-line", "0") as server:
        server.key = key
        yield server
    log = server.log()
    assert "Traceback" not in log and "[ERROR]" not in log, log[-5000:]


@pytest.mark.parametrize("run", range(max(len(NAMED_SEEDS), 1)))
def test_schemathesis_with_the_repositorys_configuration_finds_nothing(site, tmp_path, run):
    seed = seed_of(run)
    done = run_schemathesis(
        site.base_url,
        site.key,
        CONFIG,
        "--checks",
        "all",
        "--max-examples",
        str(EXAMPLES),
        "--workers",
        "1",
        "--seed",
        str(seed),
        cwd=tmp_path,
    )
    output = done.stdout + done.stderr
    print(output[-3000:])
    failed = f"USERGROUPS_SCHEMATHESIS_SEEDS={seed}:\n{output[-8000:]}"
    assert done.returncode == 0, failed
    assert "FAILURES" not in output and "Configuration:    " + str(CONFIG) in output, failed
    # Every operation tested, every test case passed.
    selected = re.search(r"Selected: (\d+)/(\d+)\n\s+Tested: (\d+)\n", output)
    assert selected is not None and len(set(selected.groups())) == 1, failed
    passed = re.search(r"(\d+) generated, (\d+) passed", output)
    assert passed is not None and passed[1] == passed[2] and int(passed[1]) > 1000, failed
