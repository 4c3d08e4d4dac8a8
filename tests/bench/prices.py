"""List prices, us-east-1, USD, as the AWS pricing pages give them (first tier, no free tier).

Each figure an assumption rather than a published price says so where it is used.
"""

from __future__ import annotations

MILLION = 1_000_000

# Step Functions
SFN_STANDARD_PER_TRANSITION = 0.025 / 1000
SFN_EXPRESS_PER_REQUEST = 1.00 / MILLION
SFN_EXPRESS_PER_GB_SECOND = 0.00001667
"""Express duration: billed in 64 MB chunks of memory, rounded up to the next 100 ms."""

# Lambda
LAMBDA_PER_REQUEST = 0.20 / MILLION
LAMBDA_ARM64_PER_GB_SECOND = 0.0000133334
LAMBDA_X86_PER_GB_SECOND = 0.0000166667
DURABLE_PER_OPERATION = 8.00 / MILLION
"""Lambda durable functions: each step, wait or callback is a durable operation."""
DURABLE_PER_GB_WRITTEN = 0.25
DURABLE_PER_GB_MONTH_RETAINED = 0.15

# Messaging
EVENTBRIDGE_PER_EVENT = 1.00 / MILLION
"""Custom events, per 64 KB chunk of an entry; delivery to targets in the account is free."""
EVENTBRIDGE_ARCHIVE_PER_GB = 0.10
SQS_PER_REQUEST = 0.40 / MILLION
"""Standard queues, per 64 KB chunk of a request's payload."""

# DynamoDB on demand (the November 2024 price)
DYNAMODB_PER_WRITE_UNIT = 0.625 / MILLION
DYNAMODB_PER_READ_UNIT = 0.125 / MILLION
# DynamoDB provisioned capacity, per capacity unit and hour (aws.amazon.com/dynamodb/pricing/provisioned/)
DYNAMODB_PER_WCU_HOUR = 0.00065
DYNAMODB_PER_RCU_HOUR = 0.00013
DYNAMODB_PER_GB_MONTH = 0.25
DYNAMODB_PITR_PER_GB_MONTH = 0.20

# Observability
LOGS_PER_GB_INGESTED = 0.50
LOGS_PER_GB_MONTH_STORED = 0.03
XRAY_PER_TRACE = 5.00 / MILLION
CLOUDWATCH_PER_ALARM_METRIC_MONTH = 0.10
CLOUDWATCH_PER_DASHBOARD_MONTH = 3.00
CLOUDWATCH_PER_CUSTOM_METRIC_MONTH = 0.30
KMS_PER_KEY_MONTH = 1.00

# Lambda's CPU share: a full vCPU at 1,769 MB, proportionally less below.
LAMBDA_MB_PER_VCPU = 1769
