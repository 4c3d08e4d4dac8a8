"""The botocore call recorder lives in the fault tooling (intentbus_faults.calls); the tests use it too."""

from intentbus_faults.calls import Call, CallLog, Proceed, recording

__all__ = ["Call", "CallLog", "Proceed", "recording"]
