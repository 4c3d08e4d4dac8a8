"""Property-based fuzz tests of the promise on malformed input (hypothesis)."""
