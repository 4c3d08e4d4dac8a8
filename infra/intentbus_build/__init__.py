"""Build tooling: what a deployable build of the template must be, and the facts about Lambda's
python3.11 runtime it is checked against. The runtime (``shared/``) never imports it.
``layer_requirements`` runs under ``sam build`` with the standard library alone; the check reads the
built template with cfn-lint's YAML reader."""
