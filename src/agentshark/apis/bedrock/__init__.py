"""Amazon Bedrock Runtime as calls: ``converse`` (the Converse and ConverseStream family,
``bedrock.converse``), ``invoke`` (InvokeModel and InvokeModelWithResponseStream with every
model vendor's own body, ``bedrock.invoke``), ``content`` (Converse content blocks -> parts),
``stream`` (the event stream folds), ``vendors`` (the vendors' invoke bodies) and ``wire``
(routes, model ids, errors and event stream messages, shared by both families).

Anthropic Messages bodies sent through InvokeModel stay with the Anthropic family
(``anthropic.messages``, provider ``bedrock.anthropic``): their wire format, SDK oracle,
tool links and history replay are Anthropic's.
"""
