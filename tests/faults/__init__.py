"""Tests of the fault harness (intentbus_faults)."""
