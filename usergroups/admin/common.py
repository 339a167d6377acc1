"""What the admin pages share: lookups limited to the offered filters, subquery counts,
secrets with a copy button, pages about one object."""

import json
from collections.abc import Callable
from datetime import datetime
from functools import wraps
from typing import TYPE_CHECKING, Any
from weakref import WeakKeyDictionary

from django.contrib import messages
from django.contrib.admin.filters import (
    AllValuesFieldListFilter,
    BooleanFieldListFilter,
    ChoicesFieldListFilter,
    DateFieldListFilter,
    EmptyFieldListFilter,
    RelatedFieldListFilter,
    SimpleListFilter,
)
from django.contrib.admin.utils import get_fields_from_path, unquote
from django.core.exceptions import FieldDoesNotExist, ImproperlyConfigured, PermissionDenied
from django.db.models import (
    Count,
    DateField,
    IntegerField,
    Model,
    OuterRef,
    QuerySet,
    Subquery,
    Value,
)
from django.db.models.constants import LOOKUP_SEP
from django.db.models.functions import Coalesce
from django.forms import Media
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.loader import render_to_string
from django.urls import URLPattern, path, reverse
from django.utils import timezone
from django.utils.dateformat import format as date_format
from django.utils.html import format_html
from django.utils.safestring import SafeString
from django.utils.translation import gettext
from django.views.decorators.debug import sensitive_variables

from usergroups import audit_context, crypto
from usergroups.fields import compact_json
from usergroups.models import APIKey, UserGroup, Webhook

if TYPE_CHECKING:
    from django.contrib.admin import ModelAdmin

MEDIA = Media(
    js=["usergroups/admin/secret.js"],
    css={"all": ["usergroups/admin/usergroups.css"]},
)

# Columns holding a secret or what one is recovered from: no URL may filter on them.
SECRET_FIELDS = frozenset(
    [
        UserGroup._meta.get_field("token_digest"),
        UserGroup._meta.get_field("token_sealed"),
        UserGroup._meta.get_field("previous_token_digest"),
        APIKey._meta.get_field("digest"),
        Webhook._meta.get_field("secret_digest"),
        Webhook._meta.get_field("secret_sealed"),
    ]
)
# Backtracking regular expressions can tie up a worker (SQLite runs Python's ``re``).
REFUSED_LOOKUPS = frozenset(["regex", "iregex"])


def acting_as_staff(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """``view`` with its changes recorded as the staff user's (audit trail)."""

    @wraps(view)
    def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        actor = audit_context.staff(request.user.get_username())
        with audit_context.acting_for_request(actor, request.META):
            return view(request, *args, **kwargs)

    return wrapped


class ActsAsStaff:
    """For every ModelAdmin of the app: what its pages change is recorded as done by the
    staff user (the services read it from usergroups.audit_context). The pages that write:
    add/change, delete, the changelist (actions) and the object pages of
    :func:`object_page_url`."""

    def changeform_view(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        return acting_as_staff(super().changeform_view)(request, *args, **kwargs)  # type: ignore[misc]

    def changelist_view(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        return acting_as_staff(super().changelist_view)(request, *args, **kwargs)  # type: ignore[misc]

    def delete_view(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        return acting_as_staff(super().delete_view)(request, *args, **kwargs)  # type: ignore[misc]


# A secret that save_model made, until response_add hands it to the page that shows it.
_NEW_SECRETS: "WeakKeyDictionary[Model, str]" = WeakKeyDictionary()

SECRET_PAGE_PURPOSE = "admin.secret_page"


def _secret_page_session_key(page: str) -> str:
    return f"usergroups.secret_page:{page}"


def _secret_page_context(request: HttpRequest, page: str) -> str:
    return f"{page}:{request.user.pk}"


def keep_for_secret_page(request: HttpRequest, page: str, payload: dict[str, Any]) -> None:
    """Keep ``payload`` (new secrets, and the ids of what they belong to) in the session
    for the one GET of ``page`` that shows it, after a redirect from the POST that made
    them. Sealed (usergroups.crypto.seal_box), bound to the page and the staff user: the
    session store is a database table by default, and it must hold no usable secret."""
    sealed = crypto.seal_box(
        SECRET_PAGE_PURPOSE, json.dumps(payload).encode(), _secret_page_context(request, page)
    )
    request.session[_secret_page_session_key(page)] = sealed


def take_for_secret_page(request: HttpRequest, page: str) -> dict[str, Any] | None:
    """What :func:`keep_for_secret_page` kept for ``page``, once: it leaves the session as
    it is read, so a reload of the page shows it no more. None when nothing is kept."""
    sealed = request.session.pop(_secret_page_session_key(page), None)
    if not isinstance(sealed, str):
        return None
    data = crypto.open_box(SECRET_PAGE_PURPOSE, sealed, _secret_page_context(request, page))
    return None if data is None else json.loads(data)


def shown_once_redirect(
    model_admin: Any, request: HttpRequest, obj: Model | None = None
) -> HttpResponseRedirect:
    """Where a second visit of a page that showed a secret goes: to the object's page (or
    the admin's index, for staff who may not view it), saying why."""
    messages.info(
        request,
        gettext("A new secret is shown once, on the page after it was made; not again."),
    )
    opts, site = model_admin.model._meta, model_admin.admin_site.name
    if obj is not None and model_admin.has_view_or_change_permission(request, obj):
        url = reverse(f"{site}:{opts.app_label}_{opts.model_name}_change", args=[obj.pk])
    elif obj is None and model_admin.has_view_or_change_permission(request):
        url = reverse(f"{site}:{opts.app_label}_{opts.model_name}_changelist")
    else:
        url = reverse(f"{site}:index")
    return HttpResponseRedirect(url)


class SecretShownOnce:
    """For a ModelAdmin whose add makes a secret and shows it once, on a page of its own
    (API keys, webhooks): ``save_model`` hands the secret to :meth:`keep_secret`;
    ``response_add`` keeps it for that page (:func:`keep_for_secret_page`) and redirects
    there, so reloading the page sends no form again and issues nothing; the page shows
    the secret on its first GET only (:meth:`secret_page` renders it). The add form has
    only "Save": "Save and add another" and "Save and continue editing" would skip that
    page and lose the secret."""

    def keep_secret(self, obj: Model, secret: str) -> None:
        _NEW_SECRETS[obj] = secret

    def secret_page(self, request: HttpRequest, obj: Any, secret: str) -> HttpResponse:
        raise NotImplementedError

    def get_urls(self) -> list[URLPattern]:
        return [
            object_page_url(self, "new-secret", self.new_secret_view, "new_secret"),
            *super().get_urls(),  # type: ignore[misc]
        ]

    @staticmethod
    def new_secret_page(obj: Model) -> str:
        return f"{obj._meta.model_name}:{obj.pk}"

    def response_add(
        self, request: HttpRequest, obj: Any, post_url_continue: str | None = None
    ) -> HttpResponse:
        secret = _NEW_SECRETS.pop(obj, None)
        if secret is None:
            return super().response_add(request, obj, post_url_continue)  # type: ignore[misc]
        keep_for_secret_page(request, self.new_secret_page(obj), {"secret": secret})
        opts, site = obj._meta, self.admin_site.name  # type: ignore[attr-defined]
        return HttpResponseRedirect(
            reverse(f"{site}:{opts.app_label}_{opts.model_name}_new_secret", args=[obj.pk])
        )

    @sensitive_variables("kept")
    def new_secret_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        obj = self.get_object(request, unquote(object_id))  # type: ignore[attr-defined]
        if obj is None:
            return missing_object_redirect(self, request, object_id)
        if not self.has_add_permission(request):  # type: ignore[attr-defined]
            raise PermissionDenied
        kept = take_for_secret_page(request, self.new_secret_page(obj))
        if kept is None:
            return shown_once_redirect(self, request, obj)
        return self.secret_page(request, obj, kept["secret"])

    def render_change_form(
        self,
        request: HttpRequest,
        context: dict[str, Any],
        add: bool = False,
        change: bool = False,
        form_url: str = "",
        obj: Any = None,
    ) -> HttpResponse:
        if add:
            context.update(show_save_and_add_another=False, show_save_and_continue=False)
        return super().render_change_form(  # type: ignore[misc]
            request, context, add, change, form_url, obj
        )


def secret_page_context(
    model_admin: "ModelAdmin[Any]", request: HttpRequest, title: str, **extra: Any
) -> dict[str, Any]:
    """What a page that shows new secrets once (after adding, or rotating keys) is
    rendered with: the admin's frame and a way back to the changelist."""
    opts = model_admin.model._meta
    site = model_admin.admin_site.name
    request.current_app = site
    return {
        **model_admin.admin_site.each_context(request),
        "title": title,
        "opts": opts,
        "app_label": opts.app_label,
        "media": model_admin.media,
        "changelist_url": reverse(f"{site}:{opts.app_label}_{opts.model_name}_changelist"),
        **extra,
    }


class OfferedLookupsOnly:
    """For every ModelAdmin of the app: the changelist filters only on what it offers.

    Django applies any query parameter that no list filter consumes straight to the
    queryset, and by default allows a lookup on any local field, so staff could probe a
    secret column a character at a time (``?token_sealed__startswith=a``) or send a
    regex that backtracks for minutes. Here a parameter is allowed only if one of the
    changelist's own filters (``list_filter``, ``date_hierarchy``) reads it, and never
    if it reaches a secret column or is a regex. A refused lookup raises Django's
    DisallowedModelAdminLookup, answered 400. Search (``search_fields``) and ordering
    (``list_display`` columns) are fixed by the admin's definition and name no secret.
    """

    model: Any  # the ModelAdmin's

    def lookup_allowed(self, lookup: str, value: Any, request: HttpRequest) -> bool:
        if touches_secret_or_regex(self.model, lookup):
            return False
        return lookup in offered_lookups(self, request)


def touches_secret_or_regex(model: type[Model], lookup: str) -> bool:
    """Whether ``lookup`` (``field__...__lookup``) is a regex or reaches a secret column."""
    parts = lookup.split(LOOKUP_SEP)
    if REFUSED_LOOKUPS.intersection(parts):
        return True
    opts = model._meta
    for part in parts:
        try:
            field = opts.get_field(part)
        except FieldDoesNotExist:
            return False  # a lookup or transform: the path ends here
        if field in SECRET_FIELDS:
            return True
        if not field.is_relation or field.related_model is None:
            return False
        opts = field.related_model._meta
    return False


def offered_lookups(model_admin: Any, request: HttpRequest) -> set[str]:
    """The query parameters the changelist's filters read, as Django's filters name them,
    worked out from the filter definitions (``list_filter``, ``date_hierarchy``)."""
    offered: set[str] = set()
    if model_admin.date_hierarchy:
        offered.update(f"{model_admin.date_hierarchy}__{part}" for part in ("year", "month", "day"))
    for item in model_admin.get_list_filter(request):
        offered.update(_filter_parameters(model_admin.model, item))
    return offered


# No public road: Django asks lookup_allowed() before it builds the filters, and only a built
# filter (its choices queried) says what it reads; tests/test_admin_lookups.py checks both agree.
def _filter_parameters(model: type[Model], item: Any) -> list[str]:
    if isinstance(item, type) and issubclass(item, SimpleListFilter):
        return [str(item.parameter_name)]
    path, filter_class = item if isinstance(item, list | tuple) else (item, None)
    field = get_fields_from_path(model, path)[-1]
    if filter_class is None:
        # What FieldListFilter.create picks for this kind of field.
        if field.is_relation:
            filter_class = RelatedFieldListFilter
        elif isinstance(field, DateField):
            filter_class = DateFieldListFilter
        else:
            filter_class = AllValuesFieldListFilter
    if issubclass(filter_class, RelatedFieldListFilter):
        target = field.target_field  # type: ignore[attr-defined]
        return [f"{path}__{target.name}__exact", f"{path}__isnull"]
    if issubclass(filter_class, DateFieldListFilter):
        return [f"{path}__gte", f"{path}__lt"] + ([f"{path}__isnull"] if field.null else [])
    if issubclass(filter_class, EmptyFieldListFilter):
        return [f"{path}__isempty"]
    if issubclass(
        filter_class, BooleanFieldListFilter | ChoicesFieldListFilter | AllValuesFieldListFilter
    ):
        return [f"{path}__exact", f"{path}__isnull"]
    raise ImproperlyConfigured(
        f"{filter_class.__name__} on {path!r}: say which parameters it reads in "
        "usergroups.admin.common._filter_parameters."
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
    # Two unbreakable parts: a narrow column wraps between the date and the time only.
    return format_html(
        '<time datetime="{}" title="{}"><span>{},</span> <span>{}</span></time>',
        value.isoformat(),
        date_format(local, "l, j F Y, H:i:s T"),
        date_format(local, "j M Y"),
        date_format(local, "H:i"),
    )


def secret_html(value: str, *, element_id: str, label: str, revealed: bool = False) -> SafeString:
    """A secret with Reveal (unless ``revealed``) and Copy buttons (see secret.js)."""
    return render_to_string(
        "usergroups/admin/secret.html",
        {"value": value, "element_id": element_id, "label": label, "revealed": revealed},
    )


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


def readable_json(value: Any) -> str:
    """JSON for people to read: indented, unless indenting more than doubles it (deep
    nesting can multiply it by 30), so a page stays within a small multiple of the limit."""
    compact = compact_json(value)
    indented = json.dumps(value, indent=2, ensure_ascii=False)
    return indented if len(indented) <= 2 * len(compact) else compact


def object_page_url(model_admin: Any, segment: str, view: Any, action: str) -> URLPattern:
    """The URL of an admin page about one object (``<object_id>/<segment>/``), behind the
    admin site's login and named as Django names its own: ``app_model_<action>``."""
    opts = model_admin.model._meta
    return path(
        f"<path:object_id>/{segment}/",
        model_admin.admin_site.admin_view(acting_as_staff(view)),
        name=f"{opts.app_label}_{opts.model_name}_{action}",
    )
