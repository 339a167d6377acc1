"""What a verified embed token gives a view: ``request.auth`` under
:class:`~usergroups.auth.embed.EmbedTokenAuthentication`."""

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from usergroups.embed.tokens import Claims
from usergroups.frozen import freeze
from usergroups.records import GroupRecord, group_source  # noqa: F401 (its public home was here)

#: Where a variable came from, besides ``"user_group:<provided_id>"``.
FROM_END_USER = "end_user"
FROM_PARAMS = "params"


@dataclass(frozen=True)
class EmbedGrant:
    """A current group and the verified claims of the token that names it.

    ``variables`` are what the dashboard may use: the group's computed properties (its
    lineage's, root first), then the token's end user's ``attributes`` over them, then
    the token's locked ``params`` over both (a top-level key of a later layer replaces).
    A token whose minter could not set what the lineage and the person set (a key
    without ``write``: ``claims.params_win`` false) never outgrows them: its ``params``
    give only keys that neither sets at this use (CONTRACT 9a). ``variable_sources``
    says, for each top-level key, which layer gave it: ``"user_group:<provided_id>"``
    (the group or ancestor that set it), ``"end_user"`` or ``"params"``. Both are
    computed once, when the grant is made, and are read-only (:mod:`usergroups.frozen`):
    a grant may be handed to many requests.
    """

    group: GroupRecord
    claims: Claims
    #: The end user's stored attributes, read in verification's one query (None: no end user).
    end_user_attributes: dict[str, Any] | None = None
    #: When the API key that minted the token expires, ending it (None: never, or no key).
    key_expires_at: datetime | None = None
    variables: dict[str, Any] = field(init=False, compare=False)
    variable_sources: dict[str, str] = field(init=False, compare=False)

    def __post_init__(self) -> None:
        group_variables = self.group.computed_properties
        person = self.end_user_attributes or {}
        params = self.claims.params
        if not self.claims.params_win:
            params = {
                key: value
                for key, value in params.items()
                if key not in group_variables and key not in person
            }
        # Unlayered, a grant holds the group's own two mappings: one copy for its tokens.
        variables, sources = group_variables, self.group.variable_sources
        if person or params:
            variables, sources = dict(group_variables), dict(sources)
            for origin, layer in ((FROM_END_USER, person), (FROM_PARAMS, params)):
                for key, value in layer.items():
                    variables[key] = value
                    sources[key] = origin
            variables, sources = freeze(variables), freeze(sources)
        # Frozen: the two are set once, here, as the dataclass's own __init__ would.
        object.__setattr__(self, "end_user_attributes", freeze(self.end_user_attributes))
        object.__setattr__(self, "variables", variables)
        object.__setattr__(self, "variable_sources", sources)

    @property
    def end_user_id(self) -> str | None:
        """The person the token was minted for, or None."""
        return self.claims.end_user_id

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
