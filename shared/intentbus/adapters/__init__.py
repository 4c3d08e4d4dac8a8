"""AWS adapters for the ports: DynamoDB, EventBridge, SQS and Powertools Idempotency."""
