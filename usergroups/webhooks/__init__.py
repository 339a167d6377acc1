"""Webhook delivery's pure parts: where a URL may point (:mod:`.addresses`), how a
message is signed (:mod:`.signing`) and how it is sent (:mod:`.sending`). No database:
:mod:`usergroups.services.webhooks` writes and reads the rows."""
