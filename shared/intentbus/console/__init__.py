"""The approvals console: one static page served by the approvals API."""
