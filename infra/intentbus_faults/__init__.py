"""The fault harness: breaks the pipeline on purpose and checks "nothing lost, nothing done twice,
nothing stale applied" over what is left. Tooling: the runtime (``intentbus``) never imports it.

    intentbus faults --workflows MODULES [--template T] [--events F] [--schedules N] [--seed S] ...

schedule.py        seeded schedules: inputs (seed generators, workflow examples; duplicates,
                   malformed) + faults
examples.py        what drives a catalog's schedules (``Workflow.examples``, ``--events``)
harness.py         FaultHarness: one in-process local cloud across schedules, both fault seams
invariants.py      Observation and the checks (a)-(i); every violation is a string with a stable code
forge.py           the attacker (the ``forge`` kind); approver.py the person deciding approvals
fanout_workflow.py the fan-out sample workflow (two commands on two resources, a journaled effect)
calls.py           the botocore seam: every call a function makes, recorded and interceptable
run.py             ``run`` / ``run_parallel`` and the figures; intentbus_cli.faults is the command
The fault mechanics themselves are intentbus_local.faults.
"""
