"""Helpers for the admin tests: staff users with chosen permissions, admin URLs."""

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.test import Client
from django.urls import reverse


def staff_client(*codenames: str, username: str = "operator") -> Client:
    """A client logged in as a staff user (not superuser) holding ``codenames``
    (of the usergroups app, e.g. ``"view_usergroup"``)."""
    user = get_user_model().objects.create_user(username=username, password="pw", is_staff=True)
    user.user_permissions.set(
        Permission.objects.filter(content_type__app_label="usergroups", codename__in=codenames)
    )
    client = Client()
    client.force_login(user)
    return client


def admin_url(model: str, view: str, *args) -> str:
    return reverse(f"admin:usergroups_{model}_{view}", args=args)
