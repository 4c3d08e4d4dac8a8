"""A new project's template.yaml, generated from the seed template shipped with the package.

The same resources as intentbus's own template, with three changes: the ``Workflows`` default names
the project's workflow module; the intentbus layer is built by the project's ``layer/Makefile`` from
the installed intentbus package (``python -m intentbus_build.layer``); and the orders workflow's table
(``OrdersTable``), the execute role's permission to write it and the execute function's
``ORDERS_TABLE`` setting. Each change replaces one exact passage of the seed template: if that passage
moved, generation stops with one line naming it, never with a half-changed template.
"""

from __future__ import annotations

from intentbus.errors import ConfigurationError

SEED_WORKFLOWS = "    Default: intentbus.workflows.incident,intentbus.workflows.direct_tool\n"
SEED_LAYER = "      ContentUri: shared/\n"
EXECUTE_CRM_SETTING = "          CRM_TABLE: !Ref CrmTable\n"
EXECUTE_CRM_POLICY = "        # The seed direct-tool workflow's CRM store.\n        - PolicyName: crm-table\n"
LAYER_SECTION = "  # ---------------------------------------------------------------- code\n"

ORDERS_TABLE = """\
  # The orders workflow's orders, keyed by tenant: one tenant's order cannot reach another's.
  OrdersTable:
    Type: AWS::DynamoDB::Table
    # checkov:skip=CKV_AWS_119: SSE is on with DynamoDB's AWS owned key and IAM decides who reads
    Properties:
      BillingMode: PAY_PER_REQUEST
      AttributeDefinitions:
        - { AttributeName: tenant_id, AttributeType: S }
        - { AttributeName: order_id, AttributeType: S }
      KeySchema:
        - { AttributeName: tenant_id, KeyType: HASH }
        - { AttributeName: order_id, KeyType: RANGE }
      PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true }
      SSESpecification: { SSEEnabled: true }

"""

ORDERS_POLICY = """\
        # The orders workflow's tool (orders.py) writes an order.
        - PolicyName: orders-table
          PolicyDocument:
            Version: "2012-10-17"
            Statement:
              - Effect: Allow
                Action: dynamodb:PutItem
                Resource: !GetAtt OrdersTable.Arn
"""


def project_template(seed: str, *, workflows: str) -> str:
    text = _replace(seed, SEED_WORKFLOWS, f"    Default: {workflows}\n", "the Workflows default")
    text = _replace(text, SEED_LAYER, "      ContentUri: layer/\n", "the layer's ContentUri")
    text = _replace(
        text,
        EXECUTE_CRM_SETTING,
        EXECUTE_CRM_SETTING + "          ORDERS_TABLE: !Ref OrdersTable\n",
        "the execute function's CRM_TABLE",
    )
    text = _replace(text, EXECUTE_CRM_POLICY, ORDERS_POLICY + EXECUTE_CRM_POLICY, "the crm-table policy")
    return _replace(text, LAYER_SECTION, ORDERS_TABLE + LAYER_SECTION, "the code section")


def _replace(text: str, passage: str, replacement: str, what: str) -> str:
    if text.count(passage) != 1:
        raise ConfigurationError(f"the seed template no longer has {what} where init expects it")
    return text.replace(passage, replacement)
