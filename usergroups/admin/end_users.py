"""End users: browse, edit with the API's rules, disable, revoke a person's embed tokens.

Every write goes through :mod:`usergroups.services.end_users`, as the API's do (the same
signals and logging). An end user holds no secret; nothing here shows one.
"""

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.views.main import ChangeList
from django.db.models import QuerySet
from django.forms import Media
from django.http import Http404, HttpRequest, HttpResponse
from django.urls import URLPattern
from django.utils.html import format_html
from django.utils.translation import gettext, ngettext
from django.utils.translation import gettext_lazy as _

from usergroups.admin.common import (
    MEDIA,
    ActsAsStaff,
    OfferedLookupsOnly,
    object_page_url,
    when,
)
from usergroups.admin.confirm import Notice, Question, confirm_object, confirm_selected
from usergroups.admin.forms import PropertiesField, TextField
from usergroups.conf import usergroups_settings
from usergroups.models import EndUser
from usergroups.services import end_users
from usergroups.services.end_users import CHANGEABLE, EndUserRecord
from usergroups.validators import check_text

if TYPE_CHECKING:
    EndUserAdminBase = admin.ModelAdmin[EndUser]
else:
    EndUserAdminBase = admin.ModelAdmin


class EndUserAdminForm(forms.ModelForm):
    end_user_id = TextField(
        label=_("End user id"),
        help_text=_(
            "The caller's own id for this person (the API's <code>end_user_id</code>), "
            "unique within the workspace."
        ),
    )
    display_name = TextField(
        required=False, help_text=_("Shown to people; the end user id when left empty.")
    )
    attributes = PropertiesField(required=False)

    class Meta:
        model = EndUser
        fields = ["workspace", "end_user_id", "display_name", "attributes", "disabled"]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Built here, not at import, so the limits follow override_settings.
        self.fields["attributes"].help_text = format_html(
            str(
                _(
                    "A JSON object, for example <code>{}</code>; empty for none. "
                    "At most {} bytes as compact JSON, nested at most {} levels deep."
                )
            ),
            '{"region": "EMEA", "role": "analyst"}',
            usergroups_settings.MAX_PROPERTIES_BYTES,
            usergroups_settings.MAX_PROPERTIES_DEPTH,
        )

    def clean_end_user_id(self) -> str:
        return check_text(self.cleaned_data["end_user_id"])

    def clean_display_name(self) -> str:
        return check_text(self.cleaned_data["display_name"], allow_empty=True)

    def clean_attributes(self) -> dict[str, Any]:
        return self.cleaned_data["attributes"] or {}

    def clean(self) -> dict[str, Any]:
        super().clean()
        cleaned = self.cleaned_data
        end_user_id = cleaned.get("end_user_id", self.instance.end_user_id)
        if "display_name" in cleaned and not cleaned["display_name"] and end_user_id:
            cleaned["display_name"] = end_user_id
        workspace = cleaned.get("workspace")
        if self.instance.pk is None and workspace is not None and end_user_id:
            if EndUser.objects.filter(workspace=workspace, end_user_id=end_user_id).exists():
                self.add_error("end_user_id", _("Another end user of this workspace has this id."))
        return cleaned


class EndUserChangeList(ChangeList):
    def get_queryset(self, request: HttpRequest, *args: Any, **kwargs: Any) -> QuerySet[Any]:
        # The list never shows attributes (up to 64 KiB each).
        return super().get_queryset(request, *args, **kwargs).defer("attributes")


def revocation_question(title: str, question: str) -> Question:
    """The confirmation of revoking a person's embed tokens, in the language of the request."""
    return Question(
        title=title,
        question=question,
        consequences=[
            gettext(
                "Every embed token minted so far for the person, in any group, is to be "
                "refused from the moment you confirm."
            ),
            gettext("The person stays enabled; embed tokens minted afterwards work."),
        ],
        submit_label=gettext("Yes, revoke the embed tokens"),
        danger=True,
    )


@admin.register(EndUser)
class EndUserAdmin(ActsAsStaff, OfferedLookupsOnly, EndUserAdminBase):
    form = EndUserAdminForm
    change_form_template = "usergroups/admin/enduser/change_form.html"
    list_display = ["end_user_id", "display_name", "workspace", "disabled", "created", "updated"]
    list_display_links = ["end_user_id", "display_name"]
    list_filter = ["disabled", "workspace"]
    search_fields = ["end_user_id", "display_name"]
    search_help_text = _("Search by end user id or display name.")
    ordering = ["end_user_id", "pk"]
    list_select_related = ["workspace"]
    actions = ["revoke_tokens", "disable"]
    empty_value_display = "—"

    @property
    def media(self) -> Media:
        return super().media + MEDIA

    def get_changelist(self, request: HttpRequest, **kwargs: Any) -> type[ChangeList]:
        return EndUserChangeList

    def get_fieldsets(self, request: HttpRequest, obj: EndUser | None = None) -> Any:
        person = ["workspace", "end_user_id", "display_name", "disabled"]
        attributes = (
            _("Attributes"),
            {
                "fields": ["attributes"],
                "description": _(
                    "Free-form data about the person, returned by the API as it is stored."
                ),
            },
        )
        if obj is None:
            return [(None, {"fields": person}), attributes]
        return [
            (None, {"fields": person}),
            attributes,
            (
                _("Embed tokens"),
                {
                    "fields": ["tokens_revoked"],
                    "description": _(
                        "Revoking them refuses every embed token minted so far for this "
                        "person, in every group; disabling or deleting the person does too."
                    ),
                },
            ),
            (_("Record"), {"fields": ["created", "updated"]}),
        ]

    def get_readonly_fields(self, request: HttpRequest, obj: EndUser | None = None) -> list[str]:
        fields = ["created", "updated", "tokens_revoked"]
        if obj is not None:
            fields += ["workspace", "end_user_id"]  # the API has no rename either
        return fields

    @admin.display(description=_("Created"), ordering="created_at")
    def created(self, obj: EndUser) -> str:
        return when(obj.created_at)

    @admin.display(description=_("Updated"), ordering="updated_at")
    def updated(self, obj: EndUser) -> str:
        return when(obj.updated_at)

    @admin.display(description=_("Embed tokens last revoked"))
    def tokens_revoked(self, obj: EndUser) -> str:
        return when(obj.tokens_revoked_at, empty=str(_("Never")))

    # Writes go through usergroups.services.end_users, as the API's do.

    def save_model(self, request: HttpRequest, obj: EndUser, form: Any, change: Any) -> None:
        if change:
            edited = {n: form.cleaned_data[n] for n in CHANGEABLE if n in form.changed_data}
            if end_users.update_end_user(obj.workspace_id, obj.end_user_id, edited) is None:
                raise Http404(_("The end user was deleted meanwhile."))
        else:
            given = {n: form.cleaned_data[n] for n in CHANGEABLE if n in form.cleaned_data}
            record, _created = end_users.put_end_user(obj.workspace_id, obj.end_user_id, given)
            obj.pk = record.pk  # the admin's history and redirect name it so

    def delete_model(self, request: HttpRequest, obj: EndUser) -> None:
        end_users.delete_end_user(obj.workspace_id, obj.end_user_id)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[EndUser]) -> None:
        for workspace_id, end_user_id in queryset.values_list("workspace_id", "end_user_id"):
            end_users.delete_end_user(workspace_id, end_user_id)

    # Revoking a person's embed tokens: a button on the change page and a bulk action;
    # disabling: a bulk action (and the form's checkbox). Each asks first.

    def get_urls(self) -> list[URLPattern]:
        return [
            object_page_url(self, "revoke-tokens", self.revoke_tokens_view, "revoke_tokens"),
            *super().get_urls(),
        ]

    def _apply(
        self,
        request: HttpRequest,
        obj: EndUser,
        change: Callable[[int, str], EndUserRecord | None],
        message: str,
    ) -> bool:
        if change(obj.workspace_id, obj.end_user_id) is None:
            return False  # deleted meanwhile
        self.log_change(request, obj, message)
        return True

    def _revoke(self, request: HttpRequest, obj: EndUser) -> bool:
        return self._apply(
            request, obj, end_users.revoke_tokens, gettext("Revoked the embed tokens.")
        )

    def revoke_tokens_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        def revoke(obj: EndUser) -> list[Notice] | None:
            if not self._revoke(request, obj):
                return None
            done = gettext("The embed tokens of “%(person)s” were revoked.") % {"person": obj}
            return [(messages.SUCCESS, done)]

        asked = revocation_question(
            gettext("Revoke this person's embed tokens?"),
            gettext("Revoke every embed token of this end user?"),
        )
        return confirm_object(self, request, object_id, asked, revoke)

    @admin.action(
        permissions=["change"], description=_("Revoke embed tokens of selected end users")
    )
    def revoke_tokens(
        self, request: HttpRequest, queryset: QuerySet[EndUser]
    ) -> HttpResponse | None:
        def revoke(people: list[EndUser]) -> list[Notice]:
            count = sum(self._revoke(request, obj) for obj in people)
            done = ngettext(
                "Revoked the embed tokens of %(count)s end user.",
                "Revoked the embed tokens of %(count)s end users.",
                count,
            ) % {"count": count}
            return [(messages.SUCCESS, done)]

        asked = revocation_question(
            gettext("Revoke embed tokens?"), gettext("Revoke every embed token of these end users?")
        )
        return confirm_selected(self, request, "revoke_tokens", queryset, asked, revoke)

    @admin.action(permissions=["change"], description=_("Disable selected end users"))
    def disable(self, request: HttpRequest, queryset: QuerySet[EndUser]) -> HttpResponse | None:
        def disable_all(people: list[EndUser]) -> list[Notice]:
            message = gettext("Disabled.")
            enabled = [obj for obj in people if not obj.disabled]
            count = sum(
                self._apply(request, o, end_users.disable_end_user, message) for o in enabled
            )
            done = ngettext(
                "Disabled %(count)s end user.", "Disabled %(count)s end users.", count
            ) % {"count": count}
            return [(messages.SUCCESS, done)]

        asked = Question(
            title=gettext("Disable end users?"),
            question=gettext("Disable these end users?"),
            consequences=[
                gettext("The person's embed tokens minted so far are revoked, in every group."),
                gettext("Untick “disabled” on the person's page to enable them again."),
            ],
            submit_label=gettext("Yes, disable them"),
            danger=True,
        )
        return confirm_selected(self, request, "disable", queryset, asked, disable_all)
