"""Read-only JSON values: what a record, a token's claims and a grant hold.

A remembered answer is handed to every request of a process (:mod:`usergroups.read_model`),
so nothing in it may be changed by the code that receives it: :func:`freeze` turns a
JSON value's objects and arrays into a :class:`ReadOnlyDict` and a :class:`ReadOnlyList`,
which are a ``dict`` and a ``list`` to every reader (``isinstance``, equality, ``json``,
DRF's renderers) and refuse every change with ``TypeError``. ``copy.copy`` and
``copy.deepcopy`` give a plain, changeable ``dict`` or ``list``: a receiver that wants to
change a value makes its own copy.
"""

import copy
from typing import Any, NoReturn


def _refuse(self: Any, *args: Any, **kwargs: Any) -> NoReturn:
    raise TypeError(f"{type(self).__name__} is read-only: change a copy (copy.deepcopy)")


class ReadOnlyDict(dict[str, Any]):
    __slots__ = ()
    __setitem__ = __delitem__ = __ior__ = _refuse
    clear = pop = popitem = setdefault = update = _refuse

    def __copy__(self) -> dict[str, Any]:
        return dict(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> dict[str, Any]:
        return {key: copy.deepcopy(value, memo) for key, value in self.items()}

    def __reduce__(self) -> tuple[Any, ...]:
        return (dict, (dict(self),))

    def __hash__(self) -> int:  # type: ignore[override]
        raise TypeError("unhashable type: 'ReadOnlyDict'")

    def __repr__(self) -> str:
        return dict.__repr__(self)


class ReadOnlyList(list[Any]):
    __slots__ = ()
    __setitem__ = __delitem__ = __iadd__ = __imul__ = _refuse
    append = extend = insert = pop = remove = clear = sort = reverse = _refuse

    def __copy__(self) -> list[Any]:
        return list(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> list[Any]:
        return [copy.deepcopy(value, memo) for value in self]

    def __reduce__(self) -> tuple[Any, ...]:
        return (list, (list(self),))

    def __repr__(self) -> str:
        return list.__repr__(self)


def freeze(value: Any) -> Any:
    """``value`` with every dict and list in it read-only (new containers; scalars as
    they are)."""
    if isinstance(value, ReadOnlyDict | ReadOnlyList):
        return value
    if isinstance(value, dict):
        return ReadOnlyDict((key, freeze(item)) for key, item in value.items())
    if isinstance(value, list):
        return ReadOnlyList(freeze(item) for item in value)
    if isinstance(value, tuple):
        return tuple(freeze(item) for item in value)
    return value
