"""Old import paths that keep working for one release, with a ``DeprecationWarning``."""

import importlib
import warnings
from collections.abc import Callable
from typing import Any


def moved_module(old: str, *new: str, since: str) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``old``, deprecated in release ``since`` and gone in
    the next: each name is taken from the first module of ``new`` that has it, with a
    warning that names where it lives now (docs/upgrading.md lists every move)."""
    major, minor = since.split(".")
    removal = f"{major}.{int(minor) + 1}"

    def __getattr__(name: str) -> Any:
        if not name.startswith("__"):
            for home in new:
                module = importlib.import_module(home)
                if hasattr(module, name):
                    warnings.warn(
                        f"{old}.{name} is deprecated since django-usergroups {since} and will "
                        f"be removed in {removal}: import it from {home}.",
                        DeprecationWarning,
                        stacklevel=2,
                    )
                    return getattr(module, name)
        raise AttributeError(f"module {old!r} has no attribute {name!r}")

    return __getattr__
