"""Webhooks (CONTRACT section 8): the webhooks a workspace registers (:mod:`.registry`),
a delivery's attempts (:mod:`.deliveries`), where a URL may point (:mod:`.addresses`), how a
message is signed (:mod:`.signing`) and how it is sent (:mod:`.sending`).

Two parts stand outside, each where its caller is: the outbox rows are written with each
event by the audit writer, in :mod:`usergroups.services.outbox` (this package records
events, so it stands above the services); the tasks that send them are the app's task
module, :mod:`usergroups.tasks`, whose paths queued tasks name."""
