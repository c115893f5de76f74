"""OpenAI's HTTP APIs and every service that speaks them: Chat Completions (``chat``, with
``chat_messages`` and ``chat_stream``), Responses and Conversations (``responses``, with
``responses_items`` and ``responses_stream``), the endpoints around them (``endpoints``:
embeddings, legacy completions, models) and what they share (``common``: provider names,
usage, errors)."""
