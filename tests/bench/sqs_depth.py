"""What each SQS operation the local cloud makes costs as a queue gets deeper, moto fixes installed.

For each depth (visible messages in one standard queue), ``measure(depth)`` times, as the local cloud
makes them: a send (EventBridge delivers an event with ``SQSBackend.send_message``), a receive of 10
(the poller's ``ReceiveMessage`` with every attribute, after asking whether the queue has a visible
message), a delete of those 10 (``delete_message_batch``), making 10 received messages visible again
(``change_message_visibility_batch``, the poller's release) and the queue's counts (``Queue.attributes``,
which the depth sampler and the idle check read). The queue is topped up so the depth holds. Each figure
is CPU milliseconds per call, the median of ``REPEATS`` repeats, and the Python lines it ran (deterministic).

``python -m tests.bench.sqs_depth [DEPTH ...]`` prints a table (default depths 100 1000 4000 8000).
"""

from __future__ import annotations

import functools
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

DEPTHS = (100, 1000, 4000, 8000)
REPEATS = 15
REGION = "us-east-1"
ACCOUNT = "123456789012"
OPERATIONS = ("send", "receive", "delete_batch", "visibility_batch", "counts")


def lines_run(action: Callable[[], Any]) -> int:
    """Python lines run by ``action`` (a count that does not depend on the machine's load)."""
    count = 0

    def trace(frame: Any, event: str, arg: Any) -> Any:
        nonlocal count
        if event == "line":
            count += 1
        return trace

    sys.settrace(trace)
    try:
        action()
    finally:
        sys.settrace(None)
    return count


def _fill(queue: Any, body: str, depth: int) -> None:
    """``depth`` messages as ``send_message`` leaves them, added without a send's per-message cost (which
    on moto's own code grows with the depth, making the setup quadratic)."""
    from moto.moto_api._internal import mock_random
    from moto.sqs.models import Message

    for _ in range(depth):
        message = Message(str(mock_random.uuid4()), body)
        message.mark_sent()
        queue._messages.append(message)


def _receivable() -> Callable[[Any], bool]:
    try:
        from intentbus_local.sqs_deep_queues import has_visible
    except ImportError:  # before it existed, the local cloud asked ``bool(queue.messages)``
        return lambda queue: bool(queue.messages)
    return has_visible


def measure(depth: int) -> dict[str, tuple[float, int]]:
    """Operation -> (ms per call, median of the repeats; Python lines per call)."""
    from moto import mock_aws

    from intentbus_local import hot_paths

    hot_paths.apply()
    receivable = _receivable()
    with mock_aws():
        from moto.sqs.models import sqs_backends

        backend = sqs_backends[ACCOUNT][REGION]
        queue = backend.create_queue("deep", VisibilityTimeout="180", MessageRetentionPeriod="1209600")
        body = '{"detail": {"run_id": "run_000001"}, "source": "intentbus"}'
        _fill(queue, body, depth)

        def receive() -> list[Any]:
            if not receivable(queue):  # the poller asks first, as the local cloud's _receivable does
                return []
            return list(backend.receive_message("deep", 10, 0, 180, ["All"]))

        def receive_into(into: list[Any]) -> None:
            into.extend(receive())

        timings: dict[str, list[float]] = {name: [] for name in OPERATIONS}
        lines: dict[str, int] = {}

        def run(name: str, action: Callable[[], Any], count_lines: bool) -> Any:
            if count_lines:
                lines[name] = lines_run(action)
                return None
            started = time.process_time()
            answer = action()
            timings[name].append((time.process_time() - started) * 1000)
            return answer

        for repeat in range(REPEATS + 1):
            counting = repeat == REPEATS
            run("send", lambda: backend.send_message("deep", body), counting)
            received: list[Any] = []
            if counting:
                lines["receive"] = lines_run(functools.partial(receive_into, received))
            else:
                received = run("receive", receive, False)
            entries = [{"Id": str(n), "ReceiptHandle": m.receipt_handle} for n, m in enumerate(received)]
            run("delete_batch", functools.partial(backend.delete_message_batch, "deep", entries), counting)
            again = receive()
            visible = [
                {"Id": str(n), "ReceiptHandle": m.receipt_handle, "VisibilityTimeout": 0}
                for n, m in enumerate(again)
            ]
            run(
                "visibility_batch",
                functools.partial(backend.change_message_visibility_batch, "deep", visible),
                counting,
            )
            run("counts", lambda: queue.attributes, counting)
            for _ in range(len(received) - 1):  # top up: the send above and these replace the deleted
                backend.send_message("deep", body)
        assert len(queue._messages) == depth
    return {name: (statistics.median(timings[name]), lines[name]) for name in OPERATIONS}


def main(argv: Sequence[str]) -> int:
    depths = [int(arg) for arg in argv] or list(DEPTHS)
    print("depth  " + "  ".join(f"{name:>22}" for name in OPERATIONS))
    for depth in depths:
        figures = measure(depth)
        cells = [f"{figures[n][0]:>9.3f} ms {figures[n][1]:>7} l" for n in OPERATIONS]
        print(f"{depth:>5}  " + "  ".join(f"{cell:>22}" for cell in cells), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
