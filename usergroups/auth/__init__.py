"""Every DRF authentication class of the app, and the permissions that go with them.

- :mod:`.api_key`: ``Authorization: Token <API key>`` for the API (a workspace's backend);
  :class:`~.api_key.AuthorizationHeaderAuthentication` is the base of all three.
- :mod:`.group_token`: ``Authorization: GroupToken <token>`` for a host's dashboards.
- :mod:`.embed`: ``Authorization: Embed <embed token>`` for a host's dashboards.
- :mod:`.permissions`: which of them a view requires, and API key scopes.
"""
