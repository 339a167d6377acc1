"""Old import paths of 0.2 that keep working in 0.3, with a ``DeprecationWarning``."""

import importlib
import warnings
from collections.abc import Callable
from typing import Any


def moved_module(old: str, new: str) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``old``: each name is taken from ``new``, with a
    warning that names where it lives now (docs/upgrading.md lists every move)."""

    def __getattr__(name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        value = getattr(importlib.import_module(new), name)
        warnings.warn(
            f"{old}.{name} moved to {new}.{name} in django-usergroups 0.3; "
            f"{old} will be removed in 0.4.",
            DeprecationWarning,
            stacklevel=2,
        )
        return value

    return __getattr__
