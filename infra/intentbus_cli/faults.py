"""``intentbus faults``: seeded fault schedules over your own workflows on the local cloud, then the
invariants (nothing lost, no effect twice, none without its recorded authorization, ...).

Exit 0 when every schedule kept every invariant; 1 on a violation (the failing seed and the command
that replays it are printed) or a schedule lost with its worker; 130 when interrupted; one line for
a bad argument (2) or a workflow module or sample that does not load (1, as every command).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import random
import shlex
import shutil
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from intentbus.catalog import Catalog
from intentbus.errors import ConfigurationError
from intentbus_cli.progress import Progress

if TYPE_CHECKING:
    from intentbus_faults.run import Outcome, Tally

_P = TypeVar("_P", bound=argparse.ArgumentParser)

DEFAULT_SCHEDULES = 40


def add_parser(commands: argparse._SubParsersAction[_P]) -> None:
    """Registers ``faults`` on the ``intentbus`` parser (importing no harness: it is heavy)."""
    faults = commands.add_parser(
        "faults",
        help="seeded fault schedules over your workflows on the local cloud, then the invariants",
        description="Crashes, timeouts, throttles, redeliveries, reordering and forged facts over your "
        "workflows; then: no effect twice, none without a recorded authorization, nothing lost or stuck.",
    )
    faults.add_argument(
        "--events",
        type=Path,
        default=None,
        help="sample inputs (JSON lines or a JSON array of envelopes), besides each workflow's examples",
    )
    faults.add_argument(
        "--schedules", type=int, default=None, help=f"default: $FAULTS, else {DEFAULT_SCHEDULES}"
    )
    faults.add_argument("--seed", type=int, default=None, help="default: $FAULTS_SEED, else random")
    faults.add_argument(
        "--workers", type=int, default=None, help="processes (default: $FAULTS_WORKERS, else 1)"
    )
    faults.add_argument(
        "--kinds",
        default=None,
        help="comma-separated fault kinds to draw from (default: all of throttle, server_error, timeout, "
        "crash_after, timeout_after, handler_timeout, partial_put_events, duplicate, reorder, "
        "visibility_lapse, forge)",
    )
    faults.add_argument(
        "--idempotency",
        choices=("dynamodb", "redis"),
        default="dynamodb",
        help="execute's idempotency store: dynamodb (default) or redis (a redis-server it starts)",
    )
    faults.add_argument("--json", type=Path, default=None, help="also write every schedule's tally here")
    faults.add_argument(
        "--verbose", "-v", action="store_true", help="print every schedule, not just failing ones"
    )
    faults.set_defaults(faults_parser=faults)


def run(args: argparse.Namespace, *, seeded: bool = False) -> int:
    """``seeded``: no template was given or found, so the seed template runs (the replay names none)."""
    from intentbus_faults import run as runner
    from intentbus_faults.examples import drive_for
    from intentbus_faults.schedule import KINDS

    parser: argparse.ArgumentParser = args.faults_parser
    schedules = _from_env(parser, args.schedules, "FAULTS", DEFAULT_SCHEDULES)
    workers = _from_env(parser, args.workers, "FAULTS_WORKERS", 1)
    if schedules < 1 or workers < 1:
        parser.error("--schedules and --workers must be at least 1")
    kinds = [kind for kind in (args.kinds or ",".join(KINDS)).split(",") if kind]
    unknown = sorted(set(kinds) - set(KINDS))
    if unknown:
        parser.error(f"unknown fault kind(s) {', '.join(unknown)}; choose from {', '.join(KINDS)}")
    if args.idempotency == "redis" and shutil.which("redis-server") is None:
        parser.error("--idempotency redis needs redis-server on PATH (Debian: apt-get install redis-server)")
    if args.idempotency == "redis" and importlib.util.find_spec("redis") is None:
        parser.error("--idempotency redis needs the redis client: pip install 'intentbus[redis]'")
    if args.events is not None and not args.events.is_file():
        parser.error(f"--events {args.events}: no such file")
    seed = _from_env(parser, args.seed, "FAULTS_SEED", random.randrange(10**6))

    here = os.getcwd()
    if here not in sys.path:
        sys.path.insert(0, here)  # the user's workflow modules, as a Lambda function would find them
    catalog = Catalog.from_modules(args.workflows)
    drive = drive_for(catalog, _events(args.events) if args.events else ())
    target = runner.Target(
        workflows=args.workflows,
        template=None if seeded or args.template is None else args.template.resolve(),
        drive=drive,
        paths=(here,),
        idempotency=args.idempotency,
    )
    signal.signal(signal.SIGTERM, _stop)
    print(f"seed: {seed}, {schedules} schedule(s), {workers} worker(s) over {', '.join(catalog.workflows)}")
    workers = min(workers, schedules)
    with Progress("faults", total=schedules, unit="schedules") as bar:
        progress = _counted(runner.print_progress(args.verbose, schedules), bar)
        if workers > 1 or schedules > runner.SCHEDULES_PER_PROCESS:
            outcome = runner.run_parallel(
                schedules, seed, workers=workers, kinds=kinds, target=target, progress=progress
            )
        else:
            outcome = runner.run(schedules, seed, kinds=kinds, target=target, progress=progress)
    outcome.replay = _replay(args, seeded)
    return _report(outcome, args.json)


def _counted(report: Callable[[Tally], None], bar: Progress) -> Callable[[Tally], None]:
    violations = 0

    def progress(tally: Tally) -> None:
        nonlocal violations
        report(tally)
        violations += bool(tally.violations)
        bar.update(advance=1, detail=f"{violations} with a violation" if violations else "")

    return progress


def _report(outcome: Outcome, json_path: Path | None) -> int:
    print(outcome.summary())
    if json_path is not None:
        json_path.parent.mkdir(parents=True, exist_ok=True)
        json_path.write_text(json.dumps(outcome.to_json(), indent=1))
        print(f"tallies written to {json_path}")
    if outcome.not_run:
        return 130
    return 1 if outcome.violations or outcome.unfinished else 0


def _replay(args: argparse.Namespace, seeded: bool) -> str:
    words = ["intentbus", "faults", "--workflows", args.workflows]
    if args.template is not None and not seeded:
        words += ["--template", str(args.template)]
    if args.events is not None:
        words += ["--events", str(args.events)]
    if args.kinds:
        words += ["--kinds", args.kinds]
    if args.idempotency != "dynamodb":
        words += ["--idempotency", args.idempotency]
    return shlex.join(words) + " --schedules 1 --seed <seed>"


def _events(path: Path) -> list[tuple[str, Any]]:
    from intentbus_cli.emit import read_envelopes

    try:
        return [(f"{path}:{number}", envelope) for number, envelope in read_envelopes(path)]
    except json.JSONDecodeError as error:
        raise ConfigurationError(f"{path}: not JSON ({error.msg})") from None


def _from_env(parser: argparse.ArgumentParser, given: int | None, name: str, default: int) -> int:
    """The option if given, else the make variable's environment value, else ``default``."""
    if given is not None:
        return given
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        return int(raw)
    except ValueError:
        parser.error(f"{name}={raw!r} is not a whole number")


def _stop(signum: int, frame: object) -> None:
    """SIGTERM (a CI timeout, ``kill``) stops the run like Ctrl-C: the finished schedules are reported."""
    raise KeyboardInterrupt
