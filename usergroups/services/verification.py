"""What an embed token grants, in one place: a token in, its
:class:`~usergroups.embed.grant.EmbedGrant` out, or the refusal that says why not.

1. :func:`usergroups.embed.tokens.verify`: everything the token says about itself
   (signature, key, claims, expiry, the site's origin rule), no query;
2. :func:`usergroups.services.lineage.find_token_group`: whether everything it is bound
   to still holds (its workspace, group, key, end user, their generations, the
   denylist), with the group's record and the person's attributes, in one query;
3. the grant: the group's variables, the person's over them, the token's params over
   both.

On PostgreSQL the answer of steps 1-3 is remembered by the read model until something
it depends on changes (:data:`usergroups.read_model.reads.GRANT`: its workspace, its
group or an ancestor, its key, its person, the denylist's word on it): a token already
verified costs neither a query nor a second signature check while it lives. Where
memory cannot be trusted, every use runs the three steps.
"""

from django.utils import timezone
from django.views.decorators.debug import sensitive_variables

from usergroups.embed import tokens
from usergroups.embed.grant import EmbedGrant
from usergroups.read_model import reads
from usergroups.services import lineage


class TokenRevoked(tokens.InvalidEmbedToken):
    """A good token whose group, workspace, key or end user no longer allows it (revoked,
    deleted, disabled, the key expired), or that is on the denylist."""


@sensitive_variables("token")
def grant_of(token: object) -> EmbedGrant:
    """The grant of ``token``; raises :class:`~usergroups.embed.tokens.ExpiredEmbedToken`,
    :class:`~usergroups.embed.tokens.OriginRequired`, :class:`TokenRevoked` or (anything
    else) :class:`~usergroups.embed.tokens.InvalidEmbedToken`."""
    if not isinstance(token, str):
        raise tokens.InvalidEmbedToken("malformed")
    grant = reads.GRANT(token, lambda using: _current_grant(token, using))
    if grant is None:
        raise TokenRevoked("revoked")
    now = timezone.now()
    if grant.expires_at <= now:
        raise tokens.ExpiredEmbedToken("expired")
    if grant.key_expires_at is not None and grant.key_expires_at <= now:
        raise TokenRevoked("key expired")
    return grant


@sensitive_variables("token")
def _current_grant(token: str, using: str) -> EmbedGrant | None:
    claims = tokens.verify(token)
    found = lineage.find_token_group(claims, using)
    if found is None:
        return None
    return EmbedGrant(found.group, claims, found.end_user_attributes, found.key_expires_at)
