"""What a verified embed token gives a view: ``request.auth`` under
:class:`~usergroups.auth.embed.EmbedTokenAuthentication`."""

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from usergroups.embed.tokens import Claims
from usergroups.records import GroupRecord


@dataclass(frozen=True)
class EmbedGrant:
    """A current group and the verified claims of the token that names it.

    ``variables`` are what the dashboard may use: the group's computed properties with
    the token's locked ``params`` laid over them (a top-level key of ``params`` wins).
    """

    group: GroupRecord
    claims: Claims

    @property
    def variables(self) -> dict[str, Any]:
        return {**self.group.computed_properties, **self.claims.params}

    @property
    def resource(self) -> str | None:
        return self.claims.resource

    @property
    def origin(self) -> str | None:
        return self.claims.origin

    @property
    def expires_at(self) -> datetime:
        return self.claims.expires_at

    def allows_resource(self, resource: str | None) -> bool:
        """Whether the token may be used where ``resource`` is served (None: anywhere).
        A token minted without a resource is not limited to one."""
        return resource is None or self.claims.resource in (None, resource)
