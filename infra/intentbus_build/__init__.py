"""Build tooling: what a deployable build of the template must be, and the facts about Lambda's
python3.11 runtime it is checked against. Standard library only; the runtime (``shared/``) never
imports it."""
