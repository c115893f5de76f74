"""Google Gemini: ``generateContent`` and the endpoints around it (AI Studio, Vertex AI,
Code Assist). :mod:`~agentshark.apis.gemini.generate` holds the families' list."""
