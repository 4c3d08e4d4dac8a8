"""The ``intentbus`` command line."""
