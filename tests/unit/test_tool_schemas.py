"""Tool schemas come from the command models; a model's tool calls are validated against them."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel, Field

from intentbus.agents.tool_schemas import input_schema, proposal_schema, tool_name
from intentbus.agents.toolkit import ToolCall, Toolkit
from intentbus.definition import MalformedDecision, ProposedCommand, TokenUsage
from intentbus.errors import ConfigurationError
from intentbus.registry import Payload
from intentbus.workflows import direct_tool, incident


def test_the_tool_schema_of_scale_service_is_its_command_model() -> None:
    assert input_schema(incident.ScaleService) == {
        "type": "object",
        "properties": {
            "service": {"type": "string", "minLength": 1, "maxLength": 255},
            "cluster": {"type": "string", "minLength": 1, "maxLength": 255},
            "environment": {"type": "string", "enum": ["dev", "staging", "production"]},
            "desired_count": {"type": "integer", "minimum": 1},
            "from_count": {"type": "integer", "minimum": 0},
        },
        "required": ["service", "cluster", "environment", "desired_count", "from_count"],
        "additionalProperties": False,
    }


def test_the_proposal_wraps_the_payload_with_rationale_confidence_and_evidence() -> None:
    schema = proposal_schema(incident.ScaleService)
    assert schema["properties"]["command"] == input_schema(incident.ScaleService)
    assert schema["required"] == ["command", "rationale", "confidence"]
    assert schema["properties"]["confidence"] == {
        "type": "number",
        "minimum": 0,
        "maximum": 1,
        "description": "How sure you are that this is the right command (0 to 1).",
    }
    assert schema["additionalProperties"] is False


def test_nested_models_are_inlined_without_refs_or_titles() -> None:
    schema = input_schema(direct_tool.ToolExecutionRequested)
    assert "$defs" not in schema
    assert "$ref" not in str(schema)
    assert "title" not in str(schema)
    assert schema["properties"]["parameters"] == {
        "type": "object",
        "properties": {
            "customer_id": {"type": "string", "pattern": r"^[A-Za-z0-9_\-]{1,64}$"},
            "status": {"type": "string", "enum": ["lead", "qualified", "customer", "churned"]},
        },
        "required": ["customer_id", "status"],
        "additionalProperties": False,
    }


def test_a_field_named_title_is_kept_and_descriptions_survive() -> None:
    class Ticket(Payload):
        title: str = Field(description="What the ticket is about")
        count: int = 1

    schema = input_schema(Ticket)
    assert schema["properties"]["title"] == {"type": "string", "description": "What the ticket is about"}
    assert schema["properties"]["count"] == {"type": "integer", "default": 1}


def test_a_recursive_model_cannot_be_a_tool() -> None:
    class Node(BaseModel):
        children: list[Node] = []

    with pytest.raises(ConfigurationError, match="recursive"):
        input_schema(Node)


@pytest.mark.parametrize(
    ("command", "expected"),
    [("scale_service", "scale_service"), ("crm.record-upsert", "crm_record-upsert"), ("a" * 70, None)],
)
def test_tool_names_fit_bedrock(command: str, expected: str | None) -> None:
    name = tool_name(command)
    assert len(name) <= 64
    assert all(c.isalnum() or c in "_-" for c in name)
    if expected is not None:
        assert name == expected
    else:
        assert name != tool_name("a" * 71)


def toolkit() -> Toolkit:
    return Toolkit({"scale_service": incident.workflow.commands["scale_service"]})


def scale(**command: Any) -> dict[str, Any]:
    payload = {"service": "api", "cluster": "shop", "environment": "dev", "desired_count": 4, "from_count": 2}
    return {"command": {**payload, **command}, "rationale": "absorb retries", "confidence": 0.7}


def test_the_description_is_the_tools_docstring_and_says_policy_decides() -> None:
    offer = toolkit().offers["scale_service"]
    assert offer.description.startswith("Propose the scale_service command: Sets the desired count")
    assert offer.description.endswith("Policy decides whether it may run.")


def test_a_valid_call_becomes_a_typed_proposal() -> None:
    decision = toolkit().decision(
        agent="operator",
        calls=[ToolCall(id="t1", name="scale_service", input=scale())],
        text="",
        tokens=TokenUsage(input_tokens=10, output_tokens=5),
        raw={},
        model="m",
    )
    assert decision.commands == (
        ProposedCommand(
            type="scale_service",
            payload={
                "service": "api",
                "cluster": "shop",
                "environment": "dev",
                "desired_count": 4,
                "from_count": 2,
            },
        ),
    )
    assert (decision.rationale, decision.confidence, decision.tokens.total, decision.model) == (
        "absorb retries",
        0.7,
        15,
        "m",
    )


def test_every_invalid_call_is_named_in_the_error() -> None:
    with pytest.raises(MalformedDecision) as caught:
        toolkit().decision(
            agent="operator",
            calls=[
                ToolCall(id="t1", name="scale_service", input=scale(desired_count="lots")),
                ToolCall(id="t2", name="delete_everything", input={}),
                ToolCall(id="t3", name="scale_service", input={"command": {}}),
            ],
            text="",
            tokens=TokenUsage(),
            raw={"x": 1},
        )
    reason = caught.value.reason
    assert "scale_service.command.desired_count: Input should be a valid integer" in reason
    assert "toolUse.name: no such tool (a name of 17 characters)" in reason
    assert "delete_everything" not in reason, "the model's own text is not repeated in a reason"
    assert "scale_service.rationale: Field required" in reason
    assert caught.value.field == "scale_service.command.desired_count"
    assert caught.value.raw == {"x": 1}


def test_text_only_is_malformed() -> None:
    with pytest.raises(MalformedDecision, match="no tool call"):
        toolkit().decision(agent="a", calls=[], text="I would scale it.", tokens=TokenUsage(), raw={})
