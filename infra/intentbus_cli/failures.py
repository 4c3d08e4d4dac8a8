"""How a failed command ends: one line on stderr, ``intentbus: <message>``, and an exit status per kind.

Routed by the exception's type (and an AWS error's code), never by its message. Anything not listed
here is a bug and keeps its traceback.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

from intentbus.errors import IntentbusError


class ExitStatus(IntEnum):
    FAILED = 1
    """The command ran and says what failed: a refused envelope, a refused decision, nothing found."""
    USAGE = 2
    """A bad argument (argparse's own status)."""
    CONFIGURATION = 3
    """Something to set up first: a name, a region, credentials, a resource that does not exist."""
    BAD_INPUT = 4
    """A file or input that cannot be read as what the command takes."""
    AWS = 5
    """An AWS call failed or was refused; it may work when tried again."""
    INTERRUPTED = 130
    """Ctrl-C, as a shell counts SIGINT."""


class UsageError(Exception):
    """Arguments that argparse accepts one by one but not together, or a value of the wrong shape."""


_BY_CODE: dict[str, ExitStatus] = {
    "configuration": ExitStatus.CONFIGURATION,
    "malformed_input": ExitStatus.BAD_INPUT,
    "not_recorded": ExitStatus.BAD_INPUT,
    "malformed_decision": ExitStatus.BAD_INPUT,
    "unknown_type": ExitStatus.BAD_INPUT,
    "duplicate_type": ExitStatus.CONFIGURATION,
    "publish": ExitStatus.AWS,
    "send": ExitStatus.AWS,
    "concurrent_update": ExitStatus.AWS,
}

_MISSING_RESOURCE = {
    "ResourceNotFoundException",
    "QueueDoesNotExist",
    "AWS.SimpleQueueService.NonExistentQueue",
}
_REFUSED_ACCESS = {"AccessDenied", "AccessDeniedException", "UnrecognizedClientException"}
_REFUSED_ACCESS |= {"ExpiredToken", "ExpiredTokenException", "InvalidClientTokenId"}


@dataclass(frozen=True)
class Failure:
    message: str
    status: ExitStatus

    @property
    def line(self) -> str:
        return f"intentbus: {self.message}"


def explain(error: BaseException) -> Failure | None:
    """The line and status for an expected failure; ``None`` for anything else (a bug: let it raise)."""
    if isinstance(error, KeyboardInterrupt):
        return Failure("interrupted", ExitStatus.INTERRUPTED)
    if isinstance(error, UsageError):
        return Failure(str(error), ExitStatus.USAGE)
    if isinstance(error, EOFError):
        return Failure("end of input: no answer was given, nothing was decided", ExitStatus.FAILED)
    if isinstance(error, IntentbusError):
        status = _BY_CODE.get(error.code, ExitStatus.FAILED)
        cause = _explain_aws(error.__cause__) if error.__cause__ is not None else None
        if cause is not None and cause.status is ExitStatus.CONFIGURATION:
            status = ExitStatus.CONFIGURATION  # e.g. PutEvents to a bus that does not exist
        return Failure(str(error), status)
    aws = _explain_aws(error)
    if aws is not None:
        return aws
    if isinstance(error, OSError):
        return Failure(str(error), ExitStatus.BAD_INPUT)
    if isinstance(error, ValueError):  # a file that is not what the command reads (InputError, JSON)
        return Failure(str(error), ExitStatus.BAD_INPUT)
    return None


def _explain_aws(error: BaseException) -> Failure | None:
    from botocore.exceptions import (
        BotoCoreError,
        ClientError,
        NoCredentialsError,
        NoRegionError,
        PartialCredentialsError,
    )

    if isinstance(error, NoRegionError):
        return Failure(
            "no AWS region: set AWS_REGION (or AWS_DEFAULT_REGION) or a region in your AWS profile",
            ExitStatus.CONFIGURATION,
        )
    if isinstance(error, NoCredentialsError | PartialCredentialsError):
        return Failure(
            "no AWS credentials: configure a profile (aws configure, AWS_PROFILE) or set AWS_ACCESS_KEY_ID "
            "and AWS_SECRET_ACCESS_KEY",
            ExitStatus.CONFIGURATION,
        )
    if isinstance(error, ClientError):
        code = str(error.response.get("Error", {}).get("Code", "")) or "error"
        told = str(error.response.get("Error", {}).get("Message", "")) or "no message"
        text = f"{error.operation_name}: {code}: {told}"
        if code in _MISSING_RESOURCE:
            return Failure(
                f"{text} (check the names given: --table, --bus, --queue or --stack)",
                ExitStatus.CONFIGURATION,
            )
        if code in _REFUSED_ACCESS:
            return Failure(f"{text} (the caller's AWS identity may not do this)", ExitStatus.CONFIGURATION)
        return Failure(text, ExitStatus.AWS)
    if isinstance(error, BotoCoreError):
        return Failure(str(error), ExitStatus.AWS)
    return None
