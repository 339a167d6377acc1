"""The admin's forms. Every rule is the API's: :mod:`usergroups.validators`, and the group
service's for ids and parents."""

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from django import forms
from django.core.exceptions import ValidationError
from django.utils import timezone
from django.utils.html import format_html
from django.utils.translation import gettext_lazy as _

from usergroups.admin.common import readable_json
from usergroups.api.parsers import loads_strict
from usergroups.conf import usergroups_settings
from usergroups.models import APIKey, SchemaMapping, UserGroup
from usergroups.scopes import SCOPES
from usergroups.services import groups, hierarchy, lineage
from usergroups.validators import MAX_ID_LENGTH, check_text, validate_mapping, validate_properties


def _size(count: int) -> str:
    return f"{count // 1024} KiB" if count % 1024 == 0 else f"{count} bytes"


class TextField(forms.CharField):
    """Text kept as typed (no trimming: ids are echoed back byte for byte), whose only
    rules are the API's: each form's ``clean_<field>`` calls :func:`check_text`."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("strip", False)
        super().__init__(**kwargs)
        self.validators = []  # Django's own NUL and length checks: check_text has them.
        self.widget.attrs["maxlength"] = str(MAX_ID_LENGTH)


class PropertiesField(forms.JSONField):
    """A JSON object edited as text, held to the API's rules for ``properties``.

    Empty text stores null. Bad JSON says where it went wrong, instead of the generic
    "Enter a valid JSON".
    """

    widget = forms.Textarea(
        attrs={"rows": 10, "cols": 80, "class": "vLargeTextField ug-json", "spellcheck": "false"}
    )

    def to_python(self, value: Any) -> Any:
        if self.disabled:
            return value
        if value in self.empty_values or (isinstance(value, str) and not value.strip()):
            return None
        if isinstance(value, dict | list | int | float):
            return value
        try:
            parsed = loads_strict(value, usergroups_settings.MAX_PROPERTIES_DEPTH)
        except ValueError as exc:
            raise ValidationError(str(exc), code="invalid")
        return validate_properties(parsed)

    def bound_data(self, data: Any, initial: Any) -> Any:
        # Keep what the user typed, even when it is not JSON, so it can be corrected.
        if self.disabled:
            return initial
        return data

    def prepare_value(self, value: Any) -> str:
        if isinstance(value, str):
            return value
        if value is None:
            return ""
        return readable_json(value)


class UserGroupAdminForm(forms.ModelForm):
    provided_id = TextField(
        label=_("Provided id"),
        help_text=_(
            "The caller's own id for this group (the API's <code>user_group_id</code>), "
            "unique within the workspace."
        ),
    )
    name = TextField(
        required=False,
        help_text=_("Shown to people; the provided id when left empty."),
    )
    properties = PropertiesField(
        required=False,
    )

    class Meta:
        model = UserGroup
        fields = ["workspace", "provided_id", "name", "parent", "properties"]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Built here, not at import, so the limits follow override_settings.
        self.fields["properties"].help_text = format_html(
            str(
                _(
                    "A JSON object, for example <code>{}</code>; empty for none. "
                    "At most {} as compact JSON, nested at most {} levels deep."
                )
            ),
            '{"region": "EU", "plan": "pro"}',
            _size(usergroups_settings.MAX_PROPERTIES_BYTES),
            usergroups_settings.MAX_PROPERTIES_DEPTH,
        )

    def clean_provided_id(self) -> str:
        return check_text(self.cleaned_data["provided_id"])

    def clean_name(self) -> str:
        return check_text(self.cleaned_data["name"], allow_empty=True)

    def clean(self) -> dict[str, Any]:
        super().clean()
        cleaned = self.cleaned_data
        if not cleaned.get("name") and cleaned.get("provided_id"):
            cleaned["name"] = cleaned["provided_id"]
        workspace = cleaned.get("workspace") or getattr(self.instance, "workspace", None)
        provided_id = cleaned.get("provided_id")
        if (
            workspace is not None
            and provided_id is not None
            and groups.provided_id_taken(workspace.pk, provided_id, other_than=self.instance.pk)
        ):
            self.add_error(
                "provided_id", _("Another user group of this workspace has this provided id.")
            )
        if "parent" in self.fields:
            self._check_parent(workspace, cleaned.get("parent"))
        return cleaned

    def _check_parent(self, workspace: Any, parent: UserGroup | None) -> None:
        """The service's rule for a parent (:func:`hierarchy.check_parent`), checked before
        anything is saved. The service names a parent by its id in the group's workspace,
        so a parent from another workspace is refused here."""
        if parent is None:
            return  # detaching: always allowed
        if workspace is not None and parent.workspace_id != workspace.pk:
            self.add_error("parent", _("The parent must be a group of the same workspace."))
            return
        chain = lineage.ancestors_of([parent.pk])[parent.pk]
        try:
            hierarchy.check_parent(chain, self.instance.pk, self.instance.parent_id)
        except hierarchy.InvalidParent as exc:
            self.add_error("parent", str(exc))


class SchemaMappingForm(forms.ModelForm):
    schema_id = TextField(label=_("Schema id"))
    data_source_id = TextField(label=_("Data source id"))

    class Meta:
        model = SchemaMapping
        fields = ["schema_id", "data_source_id"]

    def clean_schema_id(self) -> str:
        return check_text(self.cleaned_data["schema_id"])

    def clean_data_source_id(self) -> str:
        return check_text(self.cleaned_data["data_source_id"])


class SchemaMappingFormSet(forms.BaseInlineFormSet):
    """Checks the mapping as a whole with the API's rule (e.g. the number of entries)."""

    def clean(self) -> None:
        super().clean()
        if any(self.errors):
            return
        mapping = {}
        for form in self.forms:
            data = getattr(form, "cleaned_data", None)
            if not data or data.get("DELETE") or "schema_id" not in data:
                continue
            mapping[data["schema_id"]] = data["data_source_id"]
        validate_mapping(mapping)

    def mapping_after(self, stored: Iterable[SchemaMapping]) -> dict[str, str]:
        """The group's whole mapping once this formset's edits apply to ``stored`` (its
        rows now). Writes nothing; sets what ``save()`` sets for the admin's history."""
        rows: dict[object, tuple[str, str]] = {
            row.pk: (row.schema_id, row.data_source_id) for row in stored
        }
        self.save(commit=False)
        for row in self.deleted_objects:
            rows.pop(row.pk, None)
        for row, _changed in self.changed_objects:
            rows[row.pk] = (row.schema_id, row.data_source_id)
        for index, row in enumerate(self.new_objects):
            rows[("new", index)] = (row.schema_id, row.data_source_id)
        return dict(rows.values())


class ScopesField(forms.MultipleChoiceField):
    """The key's scopes (usergroups.scopes) as checkboxes; at least one."""

    widget = forms.CheckboxSelectMultiple

    def __init__(self, offered: tuple[str, ...] = SCOPES, **kwargs: Any) -> None:
        kwargs.setdefault("error_messages", {"required": _("Choose at least one scope.")})
        super().__init__(choices=[(scope, scope) for scope in offered], **kwargs)


class APIKeyAddForm(forms.ModelForm):
    """Only what a person chooses; the key itself is made on the server. The scopes are
    applied by the admin's save_model (APIKey.set_scopes), not by the ModelForm."""

    name = TextField(
        required=False,
        help_text=_("What the key is for, e.g. “Production backend”, to tell keys apart."),
    )
    scopes = ScopesField(
        initial=list(SCOPES),
        help_text=_(
            "What the key may do: read (get an existing group, list groups), write "
            "(create, update, delete groups), rotate (rotate a group's token), embed (embed "
            "tokens). Scopes can be narrowed later, never widened."
        ),
    )

    class Meta:
        model = APIKey
        fields = ["workspace", "name", "expires_at"]
        help_texts = {
            "workspace": _("The key acts for this workspace and sees only its user groups."),
            "expires_at": _("Leave empty for a key that does not expire."),
        }

    def clean_name(self) -> str:
        return check_text(self.cleaned_data["name"], allow_empty=True)

    def clean_expires_at(self) -> datetime | None:
        expires_at = self.cleaned_data["expires_at"]
        if expires_at is not None and expires_at <= timezone.now():
            raise ValidationError(_("Must be in the future."), code="past")
        return expires_at


class APIKeyChangeForm(APIKeyAddForm):
    """Scopes can be narrowed, never widened: only those the key holds are offered, so a
    key handed out for reading never becomes able to write. To give more, issue a new key."""

    class Meta(APIKeyAddForm.Meta):
        fields = ["name", "expires_at"]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        held = tuple(scope for scope in SCOPES if self.instance.has_scope(scope))
        self.fields["scopes"] = ScopesField(
            offered=held,
            initial=list(held),
            help_text=_(
                "Untick a scope to take it away from the key; this cannot be undone. "
                "A key never gets a scope it lacks: for more, create a new key."
            ),
        )

    def clean_expires_at(self) -> datetime | None:
        expires_at = self.cleaned_data["expires_at"]
        if "expires_at" in self.changed_data:
            return super().clean_expires_at()
        return expires_at
