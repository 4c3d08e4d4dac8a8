"""The fault harness: breaks the pipeline on purpose and checks "nothing lost, nothing done twice,
nothing stale applied" over what is left.

    python -m intentbus_faults.run [--schedules N] [--seed S] [--kinds k1,k2] [--verbose]

schedule.py     seeded schedules: inputs (incident, direct tool, fan-out; duplicates, malformed) + faults
harness.py      FaultHarness: one in-process local cloud across schedules, both fault seams, run(schedule)
invariants.py   Observation and the checks (a)-(e); every violation is a string with a stable code
fanout_workflow the fan-out workflow (two commands on two resources, a journaled effect)
run.py          the CLI and ``run(schedules, seed)``
The fault mechanics themselves are intentbus_local.faults.
"""
