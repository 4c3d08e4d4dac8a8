"""RepairQuarantined is a switch on a running stack: on deploys the repair function on the quarantine
queue and gives the queue its DLQ; off removes both, and the quarantine queue is the CLI's again."""

from __future__ import annotations

import logging
import warnings
from pathlib import Path

from intentbus_local.cloud import LocalCloud


def test_turning_the_repair_path_on_and_off_on_a_running_stack(tmp_path: Path) -> None:
    warnings.filterwarnings("ignore", module="moto")
    logging.getLogger("moto").setLevel(logging.ERROR)
    with LocalCloud(mode="inprocess", logs_dir=tmp_path / "logs") as cloud:
        assert "RepairFunction" not in cloud.topology.functions
        assert "QuarantineQueue" not in cloud.topology.dlqs

        cloud.redeploy(parameters={"RepairQuarantined": "on"})
        (mapping,) = cloud.topology.functions["RepairFunction"].mappings
        assert mapping.queue.logical_id == "QuarantineQueue"
        assert (mapping.visibility_timeout, mapping.max_receive_count) == (720, 5)
        assert mapping.dlq is not None
        assert mapping.dlq.logical_id == "QuarantineDLQ"

        cloud.redeploy(parameters={"RepairQuarantined": "off"})
        assert "RepairFunction" not in cloud.topology.functions
        assert "QuarantineQueue" not in cloud.topology.dlqs
