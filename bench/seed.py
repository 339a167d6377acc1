"""Seed a migrated data set: ``python -m bench.seed GROUPS`` (the site's environment).

Everything through public doors: the app's API key from its ``create_api_key``
command, its groups through its own HTTP API (Django's test client, in process), the
peers' credentials through their models' documented managers. Prints one JSON line:
the secrets the load generator sends.
"""

import io
import json
import sys


def main() -> None:
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.test import Client
    from knox.models import AuthToken
    from rest_framework.authtoken.models import Token

    from bench.workload import GET_BODY

    groups = int(sys.argv[1])
    out = io.StringIO()
    call_command("create_api_key", workspace="bench", name="bench", stdout=out)
    api_key = out.getvalue().strip()
    user = get_user_model().objects.create_user("bench")
    authtoken = Token.objects.create(user=user).key
    _instance, knox_token = AuthToken.objects.create(user=user)

    client = Client(HTTP_HOST="127.0.0.1")
    fillers = (
        {
            "user_group_id": f"filler-{number:05d}",
            "name": f"Filler {number}",
            "mapping": {"sales": f"ds-{number}"},
            "properties": {"region": "eu-west"},
        }
        for number in range(1, groups)
    )
    for body in (GET_BODY, *fillers):
        answer = client.generic(
            "GET",
            "/api/user",
            json.dumps(body),
            content_type="application/json",
            headers={"Authorization": f"Token {api_key}"},
        )
        if answer.status_code != 200:
            raise SystemExit(f"seeding {body['user_group_id']}: {answer.status_code}")
    print(json.dumps({"api_key": api_key, "authtoken": authtoken, "knox": knox_token}))


if __name__ == "__main__":
    main()
