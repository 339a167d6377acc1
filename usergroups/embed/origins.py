"""Web origins (RFC 6454) as embed tokens carry them: ``http(s)://host[:port]``.

An origin given to mint is kept in its ASCII serialization, the form browsers send in
the ``Origin`` header: scheme and host lowercased, the scheme's default port left out.
Anything beyond the origin (a path, even "/", a query, a fragment, userinfo) is refused
rather than cut off, so a caller never locks a token to something other than it meant.
"""

import re

MAX_ORIGIN_LENGTH = 255
_LABEL = r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?"
_ORIGIN = re.compile(
    rf"(?P<scheme>https?)://(?P<host>{_LABEL}(?:\.{_LABEL})*|\[[0-9a-f:.]+\])(?::(?P<port>[0-9]{{1,5}}))?",
    re.IGNORECASE | re.ASCII,
)
_DEFAULT_PORTS = {"http": 80, "https": 443}


def normalize_origin(text: str) -> str | None:
    """``text`` as an origin in its serialized form, or None if it is not one."""
    if len(text) > MAX_ORIGIN_LENGTH:
        return None
    match = _ORIGIN.fullmatch(text)
    if match is None:
        return None
    scheme, host = match["scheme"].lower(), match["host"].lower()
    port = match["port"]
    if port is None:
        return f"{scheme}://{host}"
    number = int(port)
    if not 0 < number < 65536:
        return None
    if number == _DEFAULT_PORTS[scheme]:
        return f"{scheme}://{host}"
    return f"{scheme}://{host}:{number}"


def same_origin(allowed: str, header: str | None) -> bool:
    """Whether a request whose ``Origin`` header is ``header`` may use a token locked to
    ``allowed``. No header: yes (not a browser's cross-origin request, or an old
    browser); the header ``null`` (a sandboxed frame, a redirect) or any other: no."""
    if header is None:
        return True
    return normalize_origin(header) == allowed
