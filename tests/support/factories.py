"""factory-boy factories for every model.

``APIKeyFactory`` and ``UserGroupFactory`` create through the services, as a caller's
request does (events, signals and all); an API key's plain secret is kept on the instance
(``.key``), since the database never has it, and a group's is its ``.token``.
"""

from typing import Any

import factory

from usergroups import crypto
from usergroups.models import APIKey, SchemaMapping, UserGroup, Workspace
from usergroups.services import groups, keys


class WorkspaceFactory(factory.django.DjangoModelFactory[Workspace]):
    class Meta:
        model = Workspace
        django_get_or_create = ("slug",)

    slug = factory.Sequence(lambda n: f"workspace-{n}")
    name = factory.LazyAttribute(lambda o: o.slug.title())


class APIKeyFactory(factory.django.DjangoModelFactory[APIKey]):
    class Meta:
        model = APIKey

    workspace = factory.SubFactory(WorkspaceFactory)
    name = factory.Sequence(lambda n: f"key {n}")

    @classmethod
    def _create(
        cls, model_class: type[APIKey], workspace: Workspace, name: str = "", **kwargs: Any
    ) -> APIKey:
        row = model_class(workspace=workspace, name=name, expires_at=kwargs.pop("expires_at", None))
        key = keys.issue_key(row)
        if kwargs:
            model_class.objects.filter(pk=row.pk).update(**kwargs)
            row.refresh_from_db()
        row.key = key
        return row


class UserGroupFactory(factory.django.DjangoModelFactory[UserGroup]):
    class Meta:
        model = UserGroup

    workspace = factory.SubFactory(WorkspaceFactory)
    provided_id = factory.Sequence(lambda n: f"customer-{n}")
    name = factory.LazyAttribute(lambda o: f"Customer {o.provided_id}")
    properties = factory.LazyFunction(lambda: {"region": "EU"})
    token = factory.LazyFunction(crypto.new_group_token)

    @classmethod
    def _build(
        cls, model_class: type[UserGroup], *args: Any, token: str, **kwargs: Any
    ) -> UserGroup:
        group = model_class(*args, **kwargs)
        group.set_token(token)
        return group

    @classmethod
    def _create(
        cls,
        model_class: type[UserGroup],
        *,
        workspace: Workspace,
        provided_id: str,
        name: str,
        properties: dict[str, Any] | None,
        token: str,
        parent: UserGroup | None = None,
        **fields_no_request_sets: Any,
    ) -> UserGroup:
        """Made as a caller's request makes one (services.groups.create_group: its
        token, event and signal); ``token`` is the service's own, not the one declared
        for build(). A field no request sets (``created_at``) is written afterwards."""
        record = groups.create_group(
            workspace.pk,
            provided_id,
            name,
            {},
            properties,
            parent_user_group_id=None if parent is None else parent.provided_id,
        )
        rows = model_class.objects.filter(pk=record.team_id)
        if fields_no_request_sets:
            rows.update(**fields_no_request_sets)
        group = rows.get()
        # ``.token`` unsealed now, under the secret in force (a test may change it next).
        assert group.token is not None
        return group


class SchemaMappingFactory(factory.django.DjangoModelFactory[SchemaMapping]):
    class Meta:
        model = SchemaMapping

    group = factory.SubFactory(UserGroupFactory)
    schema_id = factory.Sequence(lambda n: f"schema-{n}")
    data_source_id = factory.Sequence(lambda n: f"source-{n}")
