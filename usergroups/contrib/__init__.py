"""Optional helpers for host code, not used by the app itself."""
