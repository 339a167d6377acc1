"""``manage.py demo_setup``: the demo workspace and its API key, idempotently.

API keys are never recoverable from the database, so the plain demo key is kept in
a git-ignored file (``.demo-api-key`` in the repo root), where the demo's customer
backend reads it to call the API (:mod:`example_project.dashboards.host_api`). It is
reused while it still authenticates; otherwise (first run, database deleted, key revoked
or expired) a new key is issued and the file rewritten. Then the key and curl commands
are printed.
"""

import json
import os
import shlex
from pathlib import Path

from django.core.management.base import BaseCommand
from django.db import transaction

from example_project.dashboards.demo import seed_demo
from example_project.dashboards.host_api import api_key_file, read_secret
from usergroups.models import APIKey, Webhook, Workspace
from usergroups.services import keys
from usergroups.webhooks import registry

KEY_NAME = "demo (make demo)"
#: What the customer site's receiver (/demo/webhook/) gets: every change, mint and revocation.
WEBHOOK_EVENTS = ["user_group", "embed_token", "end_user", "api_key", "webhook"]


def write_key(path: Path, key: str) -> None:
    """Write the key readable by its owner only."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="ascii") as file:
        file.write(key + "\n")
    os.chmod(path, 0o600)


class Command(BaseCommand):
    help = "Create the demo workspace and an API key (reused while it works); print curl commands."

    def add_arguments(self, parser):
        parser.add_argument("--workspace", default="demo", help="Workspace slug (default: demo).")
        parser.add_argument(
            "--key-file",
            type=Path,
            default=api_key_file(),
            help="Where the plain demo key is kept, for the demo's customer backend too "
            "(default: DEMO_API_KEY_FILE, .demo-api-key in the repo root).",
        )
        parser.add_argument(
            "--base-url", default="http://127.0.0.1:8000", help="Server address for the examples."
        )

    def handle(self, *args, workspace: str, key_file: Path, base_url: str, **options):
        with transaction.atomic():
            space, created = Workspace.objects.get_or_create(
                slug=workspace, defaults={"name": "Demo"}
            )
            key = read_secret(key_file)
            row = keys.find_api_key(key) if key else None
            usable = (
                row is not None
                and row.workspace_id == space.pk
                and APIKey.objects.usable().filter(pk=row.pk).exists()
            )
            if not usable:
                row = APIKey(workspace=space, name=KEY_NAME)
                key = keys.issue_key(row)
        if not usable:
            write_key(key_file, key)
        what = "Created" if created else "Using"
        self.stdout.write(f"{what} workspace {space.slug!r}.")
        if usable:
            self.stdout.write(f"Reusing the demo API key {row.prefix}… from {key_file}.")
        else:
            self.stdout.write(f"Issued a new demo API key {row.prefix}…, saved to {key_file}.")
        self.stdout.write(self.instructions(key, base_url.rstrip("/"), key_file))
        # Beside the key (the receiver reads it from the repo root, the default).
        secret_file = key_file.parent / ".demo-webhook-secret"
        self.register_receiver(space, base_url.rstrip("/") + "/demo/webhook/", secret_file)
        seed_demo(space, self.stdout, base_url)  # demo groups; prints the /demo/ page's URL

    def register_receiver(self, space: Workspace, url: str, secret_file: Path) -> None:
        """The customer site's webhook receiver, registered once; its secret is kept in
        ``.demo-webhook-secret`` (like the key, it cannot be read back from the database)."""
        secret = read_secret(secret_file)
        current = Webhook.objects.filter(workspace=space, url=url, disabled=False).first()
        if current is not None and secret and current.secret() == secret:
            self.stdout.write(f"Reusing the demo webhook {current.webhook_id} to {url}.")
            return
        for stale in Webhook.objects.filter(workspace=space, url=url):
            registry.delete_webhook(space.pk, stale.webhook_id)
        webhook, secret = registry.create_webhook(
            space.pk, url, WEBHOOK_EVENTS, "The demo customer site's activity panel"
        )
        write_key(secret_file, secret)
        self.stdout.write(
            f"Registered the demo webhook {webhook.webhook_id} to {url} (secret in "
            f"{secret_file.name}); `manage.py db_worker` delivers to it."
        )

    def instructions(self, key: str, base_url: str, key_file: Path) -> str:
        url = f"{base_url}/api/user"
        auth = shlex.quote(f"Authorization: Token {key}")
        json_type = "-H 'Content-Type: application/json'"
        curl = "curl -sS -w '\\n'"  # -w: a newline after the JSON answer
        body = json.dumps(
            {
                "user_group_id": "acme",
                "name": "Acme Inc.",
                "mapping": {"sales": "eu_warehouse"},
                "properties": {"regions": ["DE"], "plan": "pro"},
            }
        )
        get = f"{curl} -X GET {url} -H {auth} {json_type} -d {shlex.quote(body)}"
        # A data source the demo dashboard has, and the regions its query filters on.
        query_mapping = "mapping=" + json.dumps({"sales": "us_warehouse"})
        query_properties = "properties=" + json.dumps({"regions": ["US-East"]})
        query = (
            f"{curl} -G {url} -H {auth} --data-urlencode user_group_id=globex "
            f"--data-urlencode 'name=Globex' "
            f"--data-urlencode {shlex.quote(query_mapping)} "
            f"--data-urlencode {shlex.quote(query_properties)}"
        )
        repeat = f"{curl} -X GET {url} -H {auth} {json_type} -d " + shlex.quote(
            json.dumps({"user_group_id": "acme"})
        )
        extract = (
            'python3 -c \'import json,sys; print(json.load(sys.stdin)["user_group"]["token"])\''
        )
        rotate = (
            f"TOKEN=$({repeat} | {extract})\n"
            f"{curl} -X POST {url} -H {auth} {json_type} "
            '-d "{\\"current_token\\": \\"$TOKEN\\"}"'
        )
        # An embed token for a demo group (seeded below), locked to the demo site's origin
        # and its dashboard's resource, then used as the dashboard does.
        mint_body = json.dumps(
            {"user_group_id": "acme-eu", "resource": "sales", "origin": base_url, "expires_in": 600}
        )
        mint = f"{curl} -X POST {url}/embed-token -H {auth} {json_type} -d {shlex.quote(mint_body)}"
        token_of = "python3 -c 'import json,sys; print(json.load(sys.stdin)[\"embed_token\"])'"
        embed = (
            f"EMBED_TOKEN=$({mint} | {token_of})\n"
            f"{curl} {base_url}/embed/api/sales/ "
            '-H "Authorization: Embed $EMBED_TOKEN" '
            f"-H {shlex.quote('Origin: ' + base_url)}"
        )
        # The same for a person of acme-eu (an end user, created or updated from the body):
        # their territory narrows the group's regions; then they are signed out everywhere.
        person_body = json.dumps(
            {
                "user_group_id": "acme-eu",
                "resource": "sales",
                "origin": base_url,
                "expires_in": 600,
                "end_user": {
                    "id": "anna.schmidt",
                    "display_name": "Anna Schmidt",
                    "attributes": {"territory": ["DE"]},
                },
            }
        )
        person_mint = (
            f"{curl} -X POST {url}/embed-token -H {auth} {json_type} -d {shlex.quote(person_body)}"
        )
        person = (
            f"PERSON_TOKEN=$({person_mint} | {token_of})\n"
            f"{curl} {base_url}/embed/api/sales/ "
            '-H "Authorization: Embed $PERSON_TOKEN" '
            f"-H {shlex.quote('Origin: ' + base_url)}"
        )
        revoke_body = shlex.quote(json.dumps({"end_user_id": "anna.schmidt"}))
        revoke = f"{curl} -X POST {url}/embed-token/revoke -H {auth} {json_type} -d {revoke_body}"
        jwks = f"{curl} {url}/embed-token/jwks"
        return f"""
Demo API key (also in {key_file.name}; shown by every `make demo`):

    {key}

Paste these into another terminal once the server below is running:

# Get or create the user group "acme" (JSON body on GET): new_user_group is true the first time
{get}

# Get or create "globex", fields in the query string (for clients that cannot send a body with GET)
{query}

# Get it again: new_user_group is false, same token, nothing changes
{repeat}

# Rotate acme's token: the old one stops working at once (a second rotation of it is 404)
{rotate}

# Mint an embed token for "acme-eu" (10 minutes, for the dashboard's "sales" data, from
# this site's pages), and fetch the dashboard's data with it as the embedded page does
{embed}

# Mint one for Anna, a person of acme-eu (an end user): the token names her, and her
# "territory" attribute narrows the group's regions (the answer says where each came from)
{person}

# Sign Anna out everywhere: every embed token naming her, in any group, is refused (401)
{revoke}

# The JWK Set: the public keys that verify embed tokens, for any JOSE library or Cube
{jwks}
"""
