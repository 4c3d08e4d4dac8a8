"""Model agents, provider-neutral: the tools a model is offered, its prompt, and reading its answer.

Pure core: no AWS here. The Bedrock adapter (``intentbus.adapters.bedrock_agent``) speaks the
Converse API with these pieces; another provider's adapter would reuse them.
"""
