"""Settings of a server a docs page asks for: the example project's, with the
``USERGROUPS`` options of a server directive (``DOCS_EXAMPLES_USERGROUPS``, JSON) laid
over its own. The page says in words which options those are."""

import json
import os

from example_project.settings import *  # noqa: F403
from example_project.settings import USERGROUPS

USERGROUPS = {**USERGROUPS, **json.loads(os.environ["DOCS_EXAMPLES_USERGROUPS"])}
