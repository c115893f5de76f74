"""xAI's API over gRPC: the chat family (``xai.chat``)."""
