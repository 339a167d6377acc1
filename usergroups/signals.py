"""Signals sent after the transaction that made the change commits.

``group_created`` and ``token_rotated`` carry ``group`` (a :class:`UserGroup`). The new
token is never sent: receivers that need it to reach the caller have the API for that.
"""

from django.dispatch import Signal

group_created = Signal()
token_rotated = Signal()
