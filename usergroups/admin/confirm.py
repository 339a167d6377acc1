"""Admin operations that ask first: a page of their own says what is about to change (a
POST form, CSRF protected); the confirming POST does the work, tells the user what came
of it and goes back. From an object's page (:func:`confirm_object`) or as a bulk action
(:func:`confirm_selected`); each operation gives only its words, its work and its news."""

from collections.abc import Callable, Iterable, Sequence, Sized
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from django import forms
from django.contrib import messages
from django.contrib.admin import helpers
from django.contrib.admin.utils import unquote
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import reverse

from usergroups.admin.common import missing_object_redirect

if TYPE_CHECKING:
    from django.contrib.admin import ModelAdmin
    from django_stubs_ext import StrPromise

#: What the user is told: a level of :mod:`django.contrib.messages` and the text.
Notice = tuple[int, str]


@dataclass(frozen=True)
class Question:
    """What a confirmation page says; ``danger`` marks what cannot be undone."""

    title: str
    question: str
    consequences: Sequence[str]
    submit_label: str
    danger: bool = False


def confirming(request: HttpRequest) -> bool:
    """Whether ``request`` is the POST of a bulk action's confirmation page."""
    return request.POST.get("post") == "yes"


def confirmation_response(
    model_admin: "ModelAdmin[Any]",
    request: HttpRequest,
    asked: Question,
    objects: Sequence[Any],
    *,
    cancel_url: str,
    action: str | None = None,
    form: forms.Form | None = None,
) -> TemplateResponse:
    """The page asking ``asked`` about ``objects``, with ``form``'s fields if given.

    With ``action``, the form re-posts the admin action with the selected objects and
    ``post=yes``, the way Django's "delete selected" confirmation does.
    """
    opts = model_admin.model._meta
    request.current_app = model_admin.admin_site.name
    context = {
        **model_admin.admin_site.each_context(request),
        "title": asked.title,
        "question": asked.question,
        "consequences": asked.consequences,
        "submit_label": asked.submit_label,
        "danger": asked.danger,
        "opts": opts,
        "app_label": opts.app_label,
        "objects": objects,
        "cancel_url": cancel_url,
        "action": action,
        "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
        "form": form,
        "media": model_admin.media,
    }
    return TemplateResponse(request, "usergroups/admin/confirm.html", context)


def skipped_note(selected: QuerySet[Any], kept: Sized, note: "StrPromise") -> list[str]:
    """``note`` (made by ``ngettext_lazy(..., "count")``) on the ``selected`` objects an
    action leaves alone, those not ``kept``; nothing if it leaves none."""
    skipped = selected.count() - len(kept)
    return [note % {"count": skipped}] if skipped else []


def _tell(model_admin: "ModelAdmin[Any]", request: HttpRequest, notices: Iterable[Notice]) -> None:
    for level, text in notices:
        model_admin.message_user(request, text, level)


def confirm_object(
    model_admin: "ModelAdmin[Any]",
    request: HttpRequest,
    object_id: str,
    asked: Question,
    act: Callable[[Any], list[Notice] | None],
    nothing_to_do: Callable[[Any], str | None] | None = None,
) -> HttpResponse:
    """The view of a page about one object (:func:`~.common.object_page_url`) that asks
    first, for staff who may change the object. The confirming POST runs ``act(obj)``,
    which says what to tell the user (None: the object was gone meanwhile), then goes
    back to the object's page. ``nothing_to_do(obj)`` says why the object needs nothing
    (said instead, before any question), or None."""
    obj = model_admin.get_object(request, unquote(object_id))
    if obj is None:
        return missing_object_redirect(model_admin, request, object_id)
    opts = model_admin.model._meta
    change_url = reverse(
        f"{model_admin.admin_site.name}:{opts.app_label}_{opts.model_name}_change", args=[obj.pk]
    )
    reason = None if nothing_to_do is None else nothing_to_do(obj)
    if reason is not None:
        model_admin.message_user(request, reason, messages.INFO)
        return HttpResponseRedirect(change_url)
    if not model_admin.has_change_permission(request, obj):
        raise PermissionDenied
    if request.method != "POST":
        return confirmation_response(model_admin, request, asked, [obj], cancel_url=change_url)
    notices = act(obj)
    if notices is None:
        return missing_object_redirect(model_admin, request, object_id)
    _tell(model_admin, request, notices)
    return HttpResponseRedirect(change_url)


def confirm_selected(
    model_admin: "ModelAdmin[Any]",
    request: HttpRequest,
    action: str,
    objects: Iterable[Any],
    asked: Question,
    act: Callable[[list[Any]], list[Notice]],
    *,
    nothing_to_do: str | None = None,
    form: forms.Form | None = None,
    then: str | None = None,
) -> HttpResponse | None:
    """What the bulk action named ``action`` answers for ``objects``: the page asking
    ``asked`` (with ``form``'s fields) until its POST confirms (and ``form`` is valid);
    then ``act(objects)``, which says what to tell the user, and back to the changelist
    (or to the URL ``then``). With no objects, ``nothing_to_do`` is said instead."""
    objects = list(objects)
    if not objects and nothing_to_do is not None:
        model_admin.message_user(request, nothing_to_do, messages.INFO)
        return None
    if not (confirming(request) and (form is None or form.is_valid())):
        return confirmation_response(
            model_admin,
            request,
            asked,
            objects,
            cancel_url=request.get_full_path(),
            action=action,
            form=form,
        )
    _tell(model_admin, request, act(objects))
    return None if then is None else HttpResponseRedirect(then)
