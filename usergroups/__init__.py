"""A user group service for embedded analytics, as a reusable Django app."""

__version__ = "0.5.0.dev0"
