"""The docs' console examples, run against a live example project: checked or rewritten.

Every ```` ```console ```` block of the pages in ``mkdocs.yml``'s nav is run, in nav
order, page after page, against one server: ``example_project`` under gunicorn on a
fresh SQLite file, set up the way ``make demo`` sets it up (``migrate``, ``demo_setup``).
Each ``$ `` line, with its continuation lines, goes through one bash session in the repo
root whose environment is the one the quickstart gives the reader's shell: the venv first
on ``PATH``, ``DJANGO_DEBUG=true``, ``SITE``, ``URL`` and ``API_KEY`` (and a
``DATABASE_URL`` naming the fresh database, which a reader's shell leaves to its default).

    python -m tests.docs_examples                    # check: exit 1 when an output differs
    python -m tests.docs_examples --rewrite          # write this run's outputs into the docs
    python -m tests.docs_examples --rewrite --fresh  # ... with this run's tokens and keys

So the outputs in the docs are produced by a run, never typed: write the command, run
``--rewrite``, read the diff. ``--rewrite`` keeps the tokens, keys and times the docs
already show wherever the run pairs with them, so the diff shows only what changed.
``.ci/run`` runs the check. Pages may be named on the command line instead of the nav's.

What is compared (:mod:`.outputs`): an HTTP answer (``curl -i``) as its status line, the
headers the docs show (plus ``WWW-Authenticate`` and ``Retry-After`` whenever the server
sends them, and ``Allow`` on a 405) and its body; any other output as its text. Values the server makes
anew on every run (API keys, key prefixes, group tokens, timestamps) are matched one to
one across the whole run: where the docs first show one, it stands for the value the run
gave at that place, and from then on the docs must show it exactly where the run gave that
value again. A command quoting it is run with the run's value. The seconds a throttled
answer asks to wait may differ. Everything else, ``team_id`` included, must be equal.

A server directive, an HTML comment on the line before a console block, runs that block
alone on a server restarted (same database) with other settings or environment:

    <!-- docs-examples: server {"USERGROUPS": {"THROTTLE_RATE": "2/minute"}} -->
    <!-- docs-examples: server {"env": {"DJANGO_SECRET_KEY": "another-key"}} -->
"""
