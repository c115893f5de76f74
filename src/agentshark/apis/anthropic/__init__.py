"""Anthropic Messages wherever it is served (Anthropic, Vertex AI, Bedrock, gateways):
``messages`` (the family), ``blocks`` (content blocks -> parts), ``stream`` (the SSE and AWS
event stream folds) and ``endpoints`` (count_tokens, models, batches, files...)."""
