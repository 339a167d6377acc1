"""The contract's failure body, ``{"success": 0, "error": {"code", "message"}}``, in one
place for the API's exception handler and for the refusals raised in a host's views."""

from typing import Any

from rest_framework import exceptions


class ContractFailure(exceptions.APIException):
    """An exception whose ``detail`` is the contract's failure body, code included.

    DRF's default exception handler answers a dict ``detail`` as the body, so a refusal
    raised in a host's view (an embed token's, :mod:`usergroups.auth.embed`) keeps its
    shape and ``code`` under that handler, ours, and any handler built on DRF's.
    """

    def __init__(self, detail: Any = None, code: str | None = None) -> None:
        super().__init__(detail, code)
        self.error_code = code or str(self.default_code)
        self.detail = failure_body(self.error_code, str(self.detail))


def failure_body(code: str, message: str, fields: dict[str, Any] | None = None) -> dict[str, Any]:
    """``{"success": 0, "error": {"code", "message"[, "fields"]}}``."""
    error: dict[str, Any] = {"code": code, "message": message}
    if fields is not None:
        error["fields"] = fields
    return {"success": 0, "error": error}
