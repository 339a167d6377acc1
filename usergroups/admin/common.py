"""What the admin pages share: subquery counts, secrets with a copy button, confirmations."""

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from django.contrib import messages
from django.contrib.admin import helpers
from django.contrib.admin.utils import unquote
from django.db.models import Count, IntegerField, OuterRef, QuerySet, Subquery, Value
from django.db.models.functions import Coalesce
from django.forms import Media
from django.http import HttpRequest, HttpResponseRedirect
from django.template.loader import render_to_string
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils import timezone
from django.utils.dateformat import format as date_format
from django.utils.html import format_html
from django.utils.safestring import SafeString
from django.utils.translation import gettext

MEDIA = Media(
    js=["usergroups/admin/secret.js"],
    css={"all": ["usergroups/admin/usergroups.css"]},
)


def subquery_count(related: QuerySet, field: str) -> Coalesce:
    """The number of ``related`` rows pointing at the outer row, as a correlated subquery.

    Unlike ``Count`` over a join, it needs no GROUP BY on the outer query and does not
    multiply rows when two counts are taken side by side.
    """
    counted = (
        related.filter(**{field: OuterRef("pk")})
        .order_by()
        .values(field)
        .annotate(n=Count("pk"))
        .values("n")
    )
    return Coalesce(Subquery(counted, output_field=IntegerField()), Value(0))


def when(value: datetime | None, empty: str = "—") -> str:
    """A moment, short enough for a list column, in full on hover; ``empty`` if None.

    (Read-only fields of callables show None as "None", so the empty text is returned
    here rather than left to ``empty_value_display``.)
    """
    if value is None:
        return empty
    local = timezone.localtime(value)
    return format_html(
        '<time datetime="{}" title="{}">{}</time>',
        value.isoformat(),
        date_format(local, "l, j F Y, H:i:s T"),
        date_format(local, "j M Y, H:i"),
    )


def secret_html(value: str, *, element_id: str, label: str, revealed: bool = False) -> SafeString:
    """A secret with Reveal (unless ``revealed``) and Copy buttons (see secret.js)."""
    return render_to_string(
        "usergroups/admin/secret.html",
        {"value": value, "element_id": element_id, "label": label, "revealed": revealed},
    )


def confirmation_response(
    model_admin: Any,
    request: Any,
    *,
    title: str,
    question: str,
    consequences: Iterable[str],
    objects: Iterable[Any],
    submit_label: str,
    cancel_url: str,
    action: str | None = None,
    danger: bool = False,
) -> TemplateResponse:
    """A page asking to confirm an operation with a POST form (CSRF protected).

    With ``action``, the form re-posts the admin action with the selected objects and
    ``post=yes``, the way Django's "delete selected" confirmation does.
    """
    objects = list(objects)
    opts = model_admin.model._meta
    request.current_app = model_admin.admin_site.name
    context = {
        **model_admin.admin_site.each_context(request),
        "title": title,
        "opts": opts,
        "app_label": opts.app_label,
        "question": question,
        "consequences": list(consequences),
        "objects": objects,
        "submit_label": submit_label,
        "cancel_url": cancel_url,
        "action": action,
        "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
        "danger": danger,
        "media": model_admin.media,
    }
    return TemplateResponse(request, "usergroups/admin/confirm.html", context)


def missing_object_redirect(
    model_admin: Any, request: HttpRequest, object_id: str
) -> HttpResponseRedirect:
    """What the admin answers for an id it does not have: a warning, then its index.

    Django's own message (and so its translations), without its private helper.
    """
    message = gettext("%(name)s with ID “%(key)s” doesn’t exist. Perhaps it was deleted?")
    name, key = model_admin.opts.verbose_name, unquote(object_id)
    messages.warning(request, message % {"name": name, "key": key})
    return HttpResponseRedirect(reverse("admin:index", current_app=model_admin.admin_site.name))
