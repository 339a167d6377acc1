"""In-process cost of one request, without sockets or a load generator.

``python -m bench.micro [N]`` calls the WSGI application directly with the benchmark's
requests against the database ``DATABASE_URL`` names (seeded by ``bench.seed``) and
prints CPU microseconds per request for each endpoint; ``--profile NAME`` runs
pyinstrument on one of them. Steadier than wrk on a busy machine, so it is what the
optimisation was iterated on; the end-to-end figures come from ``bench.run``.
"""

import io
import json
import sys
import time


def environ(path: str, auth: str, body: bytes, method: str = "GET") -> dict:
    return {
        "REQUEST_METHOD": method,
        "PATH_INFO": path,
        "QUERY_STRING": "",
        "SERVER_NAME": "127.0.0.1",
        "SERVER_PORT": "8000",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "HTTP_HOST": "127.0.0.1",
        "HTTP_AUTHORIZATION": auth,
        "CONTENT_TYPE": "application/json",
        "CONTENT_LENGTH": str(len(body)),
        "wsgi.input": io.BytesIO(body),
        "wsgi.url_scheme": "http",
        "wsgi.errors": sys.stderr,
        "wsgi.multithread": False,
        "wsgi.multiprocess": True,
        "wsgi.run_once": False,
        "wsgi.version": (1, 0),
    }


def setup(before_handler=lambda: None) -> tuple:
    """Django set up on the environment's database; the WSGI application and the get
    requests of each implementation: ``{name: (path, Authorization, body)}``."""
    import os

    from bench.datasets import SECRET

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bench.site.settings")
    os.environ.setdefault("DJANGO_SECRET_KEY", SECRET)
    import django

    django.setup()
    from django.core.wsgi import get_wsgi_application
    from rest_framework.authtoken.models import Token

    from bench.workload import DEEP_BODY, GET_BODY
    from usergroups.models import APIKey, Workspace
    from usergroups.services import keys

    before_handler()
    app = get_wsgi_application()
    # A fresh key: the plain key is not stored, so issue one for this run.
    key = keys.issue_key(APIKey(workspace=Workspace.objects.get(slug="bench"), name="micro"))
    APIKey.objects.filter(name="micro").update(last_used_at=django.utils.timezone.now())
    drf = Token.objects.get().key
    body = json.dumps(GET_BODY).encode()
    mint_body = json.dumps({"user_group_id": GET_BODY["user_group_id"]}).encode()
    cases = {
        "baseline0": ("/bench/bare", f"Token {drf}", body),
        "noauth": ("/bench/noauth", "", b""),
        "baseline1": ("/bench/constant", f"Token {drf}", body),
        "usergroups": ("/api/user", f"Token {key}", body),
        # The same at depth 5: one more query, for all four ancestors.
        "usergroups-depth5": ("/api/user", f"Token {key}", json.dumps(DEEP_BODY).encode()),
        "baseline2": ("/bench/obvious", f"Token {drf}", body),
        "embed-mint": ("/api/user/embed-token", f"Token {key}", mint_body, "POST"),
    }
    minted = app(
        environ("/api/user/embed-token", f"Token {key}", mint_body, "POST"),
        lambda s, h, exc_info=None: None,
    )
    embed_token = json.loads(b"".join(minted))["embed_token"]
    cases["embed-verify"] = ("/bench/embed", f"Embed {embed_token}", b"")
    return app, cases


def main() -> None:
    args = sys.argv[1:]
    profile = None
    if "--profile" in args:
        i = args.index("--profile")
        profile = args[i + 1]
        del args[i : i + 2]
    n = int(args[0]) if args else 2000
    app, cases = setup()

    tokens = {}
    counter = [0]

    def call(case):
        if case.startswith(("create-", "rotate-")):
            kind, impl = case.split("-")
            path, auth = cases[impl][:2]
            counter[0] += 1
            if kind == "create":
                data = json.dumps(
                    {"user_group_id": f"micro-{counter[0]}-{time.time()}", "mapping": {"a": "b"}}
                ).encode()
                method = "GET"
            else:
                if impl not in tokens:
                    first = app(
                        environ(path, auth, json.dumps({"user_group_id": "micro-chain"}).encode()),
                        lambda s, h, exc_info=None: None,
                    )
                    tokens[impl] = json.loads(b"".join(first))["user_group"]["token"]
                data = json.dumps({"current_token": tokens[impl]}).encode()
                method = "POST"
        else:
            path, auth, data, *rest = cases[case]
            method = rest[0] if rest else "GET"
        status = []
        out = app(environ(path, auth, data, method), lambda s, h, exc_info=None: status.append(s))
        content = b"".join(out)
        if hasattr(out, "close"):
            out.close()
        assert status[0].startswith("200"), (case, status, content)
        if case.startswith("rotate"):
            tokens[case.split("-")[1]] = json.loads(content)["user_group"]["token"]

    names = [
        *cases,
        "create-usergroups",
        "create-baseline2",
        "rotate-usergroups",
        "rotate-baseline2",
    ]
    for case in names:
        for _ in range(200):
            call(case)
    if profile:
        from pyinstrument import Profiler

        profiler = Profiler(interval=0.0001)
        profiler.start()
        for _ in range(n):
            call(profile)
        profiler.stop()
        print(profiler.output_text(unicode=False, color=False, show_all=False))
        return
    results = {}
    for _ in range(3):
        for case in names:
            start = time.process_time()
            for _ in range(n):
                call(case)
            results.setdefault(case, []).append((time.process_time() - start) / n * 1e6)
    for case, values in results.items():
        print(f"{case:17s} {min(values):8.1f} us/request (min of 3)  {sorted(values)}")


if __name__ == "__main__":
    main()
