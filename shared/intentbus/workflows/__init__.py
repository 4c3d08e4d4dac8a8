"""The seed workflows, written through the public API exactly as a user writes theirs."""
