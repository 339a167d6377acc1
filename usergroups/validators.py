"""The rules for group fields, in one place for the API and the admin.

They raise Django's ``ValidationError``, which DRF serializers and Django forms both
turn into field errors.
"""

from collections.abc import Iterator
from typing import Any

from django.core.exceptions import ValidationError
from django.utils.translation import gettext_lazy as _

from usergroups.conf import usergroups_settings
from usergroups.fields import compact_json

MAX_ID_LENGTH = 255


def check_text(value: str, max_length: int = MAX_ID_LENGTH, *, allow_empty: bool = False) -> str:
    """A string the database can store as given: bounded, no NUL, no lone surrogate."""
    if not isinstance(value, str):
        raise ValidationError(_("Must be a string."), code="invalid")
    if not value and not allow_empty:
        raise ValidationError(_("Must not be empty."), code="blank")
    if len(value) > max_length:
        raise ValidationError(
            _("Must be at most %(limit)s characters.") % {"limit": max_length}, code="max_length"
        )
    _check_storable(value)
    return value


def _check_storable(text: str) -> None:
    if "\x00" in text:
        raise ValidationError(_("Must not contain NUL characters."), code="null_characters")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise ValidationError(_("Must be valid Unicode (no lone surrogates)."), code="surrogates")


def json_integer(value: Any) -> int | None:
    """``value`` as an int if JSON counts it an integer, else None: an int (not a bool), or
    a float with no fraction (``7252.0``), which JSON Schema's ``integer`` includes and a
    client's JSON library may write for a whole number. The one rule for every integer a
    body holds."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None


def validate_mapping(value: Any) -> dict[str, str]:
    """Schema id -> data source id; an integer data source id (:func:`json_integer`)
    becomes its decimal string."""
    if not isinstance(value, dict):
        raise ValidationError(
            _("Must be an object of schema id to data source id."), code="invalid"
        )
    limit = usergroups_settings.MAX_MAPPING_ENTRIES
    if len(value) > limit:
        raise ValidationError(
            _("Must map at most %(limit)s schema ids.") % {"limit": limit}, code="max_length"
        )
    mapping = {}
    for schema_id, source in value.items():
        if (number := json_integer(source)) is not None:
            source = str(number)
        try:
            check_text(schema_id)
            check_text(source)
        except ValidationError as exc:
            message = _(
                "Schema ids and data source ids must be non-empty strings of at most "
                "%(limit)s characters without NUL (%(reason)s)"
            )
            raise ValidationError(
                message % {"limit": MAX_ID_LENGTH, "reason": exc.messages[0]}, code="invalid"
            )
        mapping[schema_id] = source
    return mapping


def json_depth(value: Any) -> int:
    """Nesting depth of a JSON value: 0 for a scalar, 1 for a flat object or list.

    Iterative, so a hostile value cannot exhaust the Python stack.
    """
    deepest = 0
    stack = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            deepest = max(deepest, depth)
            stack.extend((child, depth + 1) for child in node.values())
        elif isinstance(node, list):
            deepest = max(deepest, depth)
            stack.extend((child, depth + 1) for child in node)
    return deepest


def _strings_in(value: Any) -> Iterator[str]:
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, str):
            yield node
        elif isinstance(node, dict):
            yield from node.keys()
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)


def validate_properties(value: Any, max_bytes: int | None = None) -> dict[str, Any]:
    """A JSON object within the size and depth limits, storable on every database;
    at most ``max_bytes`` of compact JSON (default: ``MAX_PROPERTIES_BYTES``)."""
    if not isinstance(value, dict):
        raise ValidationError(_("Must be a JSON object."), code="invalid")
    max_depth = usergroups_settings.MAX_PROPERTIES_DEPTH
    if json_depth(value) > max_depth:
        raise ValidationError(
            _("Must be nested at most %(depth)s deep.") % {"depth": max_depth}, code="too_deep"
        )
    for text in _strings_in(value):
        _check_storable(text)
    if max_bytes is None:
        max_bytes = usergroups_settings.MAX_PROPERTIES_BYTES
    try:
        # Measured in the form it is stored and read back in (JSONTextField).
        size = len(compact_json(value).encode())
    except ValueError:
        raise ValidationError(_("Must not contain NaN or Infinity."), code="invalid")
    if size > max_bytes:
        raise ValidationError(
            _("Must be at most %(limit)s bytes as JSON.") % {"limit": max_bytes}, code="too_large"
        )
    return value
