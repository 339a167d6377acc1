"""``request.user`` of a request that a group's token authenticated (an embed token or a
group token): the group, as an authenticated principal.

It is not a Django user and has no row of its own: it lets ``IsAuthenticated``, views
that check ``request.user.is_authenticated`` and throttles keyed on the user
(``UserRateThrottle``) treat the group as who is asking. What the token grants stays
in ``request.auth``.
"""

from dataclasses import dataclass, field
from typing import Any

from usergroups.records import GroupRecord


@dataclass(frozen=True)
class GroupPrincipal:
    """The group behind a request, in the attributes Django and DRF read of a user.

    ``pk`` (and ``id``) is ``"usergroup:<team_id>"``: never equal to a user's primary
    key, so a throttle keyed on the user counts a group apart from every user.
    """

    team_id: int
    user_group_id: str
    workspace_id: int
    name: str = field(compare=False)

    is_authenticated = True
    is_anonymous = False
    is_active = True
    is_staff = False
    is_superuser = False

    @classmethod
    def of(cls, group: GroupRecord) -> "GroupPrincipal":
        return cls(group.team_id, group.provided_id, group.workspace_id, group.name)

    @property
    def pk(self) -> str:
        return f"usergroup:{self.team_id}"

    @property
    def id(self) -> str:
        return self.pk

    @property
    def username(self) -> str:
        return self.pk

    def get_username(self) -> str:
        return self.pk

    def has_perm(self, perm: str, obj: Any = None) -> bool:
        """No Django permission: a group's token reaches the host's embed views only."""
        return False

    def has_perms(self, perm_list: Any, obj: Any = None) -> bool:
        return False

    def has_module_perms(self, app_label: str) -> bool:
        return False

    def __str__(self) -> str:
        return self.pk
