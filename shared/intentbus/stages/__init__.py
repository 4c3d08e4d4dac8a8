"""The five stages' cores: pure logic over the ports; the Lambda handlers call ``handle``."""
