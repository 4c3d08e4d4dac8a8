"""intentbus: event-driven, policy-gated workflows for AI agents on AWS serverless.

Importing the package imports nothing else: handlers stay cheap to cold-start.
"""

__version__ = "0.1.0"
