"""Web origins (RFC 6454) as embed tokens carry them: ``http(s)://host[:port]``.

An origin given to mint is kept in its ASCII serialization, the form browsers send in
the ``Origin`` header: scheme and host lowercased, the scheme's default port left out.
Anything beyond the origin (a path, even "/", a query, a fragment, userinfo) is refused
rather than cut off, so a caller never locks a token to something other than it meant.
"""

import re

MAX_ORIGIN_LENGTH = 255
_LABEL = "[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
# A port from 1 to 65535 in at most 5 digits, leading zeros allowed.
_PORT = (
    "0{0,4}[1-9]|0{0,3}[1-9][0-9]|0{0,2}[1-9][0-9]{2}|0?[1-9][0-9]{3}|[1-5][0-9]{4}"
    "|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5]"
)
#: What an origin is: scheme, host, port (groups 1 to 3). Written without flags or named
#: groups, so that Python and JSON Schema (the OpenAPI description states it) read it alike.
ORIGIN_PATTERN = (
    f"^([Hh][Tt][Tt][Pp][Ss]?)://({_LABEL}(?:\\.{_LABEL})*|\\[[0-9A-Fa-f:.]+\\])(?::({_PORT}))?$"
)
_ORIGIN = re.compile(ORIGIN_PATTERN)
_DEFAULT_PORTS = {"http": 80, "https": 443}


def normalize_origin(text: str) -> str | None:
    """``text`` as an origin in its serialized form, or None if it is not one."""
    match = _ORIGIN.fullmatch(text) if len(text) <= MAX_ORIGIN_LENGTH else None
    if match is None:
        return None
    scheme, host, port = match[1].lower(), match[2].lower(), match[3]
    if port is None or int(port) == _DEFAULT_PORTS[scheme]:
        return f"{scheme}://{host}"
    return f"{scheme}://{host}:{int(port)}"


def same_origin(allowed: str, header: str | None) -> bool:
    """Whether a request whose ``Origin`` header is ``header`` may use a token locked to
    ``allowed``. No header: yes (not a browser's cross-origin request, or an old
    browser); the header ``null`` (a sandboxed frame, a redirect) or any other: no."""
    if header is None:
        return True
    return normalize_origin(header) == allowed
