"""APIs: an :class:`~agentshark.model.Exchange` -> a :class:`~agentshark.apis.model.Call`.

Each vendor has its own package (``openai``, ``anthropic``, ``bedrock``, ``mcp``, ``a2a``);
each API family in it (OpenAI Chat Completions, OpenAI Responses, Anthropic Messages, Bedrock
Converse...) is one module that scores its claim on an exchange from the body's shape,
content type, stream event names, method and path (host is only a hint) and, when it wins,
parses request and response (whole or streamed) into a normalized call: messages made of
OpenTelemetry GenAI parts, usage, finish reasons, errors and ids. ``registry`` holds the one
literal list of families and imports them; the families import only the shared modules
beside it: ``family`` (what a family offers), ``model`` (calls and parts), ``view`` (an
exchange as a family reads it), ``accumulate`` (the parts accumulator every streaming family
feeds) and ``appids`` (application ids found on the wire).
"""
