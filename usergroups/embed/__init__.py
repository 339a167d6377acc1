"""Embed tokens (CONTRACT section 6): short-lived JWTs a caller's backend mints for one
group and hands to a browser, instead of the long-lived group token.

- :mod:`.keys`: the signing keys (derived from the sealing secret, or given) and the
  JWK Set that lets anyone verify a token without calling back.
- :mod:`.tokens`: signing and verifying with PyJWT; no database.
- :mod:`.origins`: what a web origin is, and comparing one with a request's.
- :mod:`.grant`: what a verified token gives a view (``request.auth``).
- :mod:`.authentication`: ``Authorization: Embed <token>`` for a host's endpoints.
- :mod:`.serializers` and :mod:`.views`: the ``/api/user/embed-token`` endpoints;
  :mod:`.openapi` describes them (loaded only with drf-spectacular).

Minting, introspection and revocation live in :mod:`usergroups.services.embed`.
"""
