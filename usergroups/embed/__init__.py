"""Embed tokens (CONTRACT section 6): short-lived JWTs a caller's backend mints for one
group and hands to a browser, instead of the long-lived group token.

- :mod:`.keys`: the signing keys (derived from the sealing secret, or given) and the
  JWK Set that lets anyone verify a token without calling back.
- :mod:`.tokens`: signing and verifying with PyJWT; no database.
- :mod:`.origins`: what a web origin is, and comparing one with a request's.
- :mod:`.grant`: what a verified token gives a view (``request.auth``).

Elsewhere, by job: the ``/api/user/embed-token`` endpoints are
:mod:`usergroups.api.embed_views` and :mod:`usergroups.api.embed_serializers`;
``Authorization: Embed <token>`` for a host's endpoints is :mod:`usergroups.auth.embed`;
a token's one verification, to a grant or a refusal, is
:mod:`usergroups.services.verification`; minting, introspection and revocation are
:mod:`usergroups.services.embed`.
"""
