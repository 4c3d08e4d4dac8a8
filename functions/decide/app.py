"""The decide stage's Lambda entry: Powertools' Logger, Metrics (Tracer with X-Ray on), the core."""

from intentbus.coldstart import importing

with importing():  # see intentbus.coldstart
    from intentbus.handler import stage_entry
    from intentbus.runtime import decide_stage

    lambda_handler = stage_entry("decide", decide_stage)
