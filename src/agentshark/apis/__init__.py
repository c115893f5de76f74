"""APIs: an :class:`~agentshark.model.Exchange` -> a :class:`~agentshark.apis.model.Call`.

Each API family (OpenAI Chat Completions, OpenAI Responses, Anthropic Messages...) is one
module that scores its claim on an exchange from the body's shape, content type, stream
event names, method and path (host is only a hint) and, when it wins, parses request and
response (whole or streamed) into a normalized call: messages made of OpenTelemetry GenAI
parts, usage, finish reasons, errors and ids. ``registry`` holds the one literal list of
families; ``accumulate`` is the parts accumulator every streaming family feeds.
"""
