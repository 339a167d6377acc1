"""The database out of reach for a while (PgBouncer stopped): every host answers the API's
own 503 and stays in the balancer, since ``/health`` does not query the database; once
PgBouncer is back, the same persistent connections' replacements serve again."""

import collections

import pytest

pytestmark = pytest.mark.cluster


def test_without_the_database_every_host_answers_503_and_stays_in(cluster, figures):
    cluster.pgbouncer.stop()
    try:
        answers = [cluster.call("GET", {"user_group_id": "outage"}) for _ in range(6)]
        states = cluster.haproxy.states()
    finally:
        cluster.pgbouncer.start()
    figures.append(
        "database unreachable (PgBouncer stopped): "
        f"{dict(collections.Counter(status for status, _, _ in answers))}, HAProxy: {states}"
    )
    assert [status for status, _, _ in answers] == [503] * 6, answers
    assert {body["error"]["code"] for _, body, _ in answers} == {"service_unavailable"}
    assert {host for _, _, host in answers} == set(cluster.names)
    assert states == dict.fromkeys(cluster.names, "UP")
    assert [cluster.call("GET", {"user_group_id": "outage"})[0] for _ in range(6)] == [200] * 6
