"""moto's CloudFormation reads the local cloud's JSON stack template as JSON, to the same template."""

from __future__ import annotations

import json

import yaml

from intentbus_local import hot_paths, stack_template
from intentbus_local.provision import deployable
from intentbus_local.template import load_template


def test_moto_s_template_reader_is_the_code_the_replacement_was_written_against() -> None:
    hot_paths.apply()
    assert stack_template.PINS.changed() == [], (
        f"moto changed how a stack reads its template (found on {stack_template.PINS.found_on}): "
        "compare intentbus_local.stack_template with it, then update its digest"
    )


def test_the_deployed_template_read_as_json_is_what_moto_s_yaml_reading_made_of_it() -> None:
    hot_paths.apply()
    from moto.cloudformation.models import Stack

    body = json.dumps(deployable(load_template().cloudformation, {}))
    moto_s = stack_template.PINS.moto_original("Stack.parse_template")

    assert Stack.parse_template(body) == moto_s(body)
    assert Stack.parse_template(body) == yaml.load(body, Loader=yaml.Loader)


def test_a_yaml_template_still_goes_through_moto_s_reader() -> None:
    hot_paths.apply()
    from moto.cloudformation.models import Stack

    template = (
        "Resources:\n  Queue:\n    Type: AWS::SQS::Queue\n    Properties:\n      QueueName: !Ref Name\n"
    )

    assert Stack.parse_template(template) == {
        "Resources": {"Queue": {"Type": "AWS::SQS::Queue", "Properties": {"QueueName": {"Ref": "Name"}}}}
    }
