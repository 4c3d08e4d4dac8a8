"""The record stage's Lambda entry: Powertools' Logger, Metrics (Tracer with X-Ray on), the core."""

from intentbus.coldstart import importing

with importing():  # see intentbus.coldstart
    from intentbus.handler import stage_entry
    from intentbus.runtime import record_stage

    lambda_handler = stage_entry("record", record_stage)
