"""The one rename table: every OTLP attribute name the export writes, in one place.

The GenAI and MCP names are those of OpenTelemetry semantic conventions **v1.41.1**, the last
core release holding them and the version Arize Phoenix pins
(https://github.com/open-telemetry/semantic-conventions/tree/v1.41.1/docs/gen-ai); the
OpenInference names follow ``Arize-ai/openinference`` ``spec/semantic_conventions.md``. A new
semconv release (the genai repository's ``gen_ai.usage.cache_write.input_tokens``, say) is a
change here and nowhere else: the projection in :mod:`.spans` uses only these constants.
"""

from __future__ import annotations

from typing import Final

SEMCONV_VERSION: Final = "1.41.1"
# --semconv: the names of another convention set, as renames of the v1.41.1 names above.
# "genai-dev" is the semantic-conventions-genai repository's unreleased set (its changelog.d:
# cache_creation renamed to cache_write); a new release is one more entry here.
RENAMES: Final[dict[str, dict[str, str]]] = {
    SEMCONV_VERSION: {},
    "genai-dev": {
        "gen_ai.usage.cache_creation.input_tokens": "gen_ai.usage.cache_write.input_tokens",
    },
}
SCHEMA_URL: Final = "https://opentelemetry.io/schemas/1.41.0"

# -- resource and scope -----------------------------------------------------------------------
SERVICE_NAME: Final = "service.name"
SERVICE_VERSION: Final = "service.version"
SEMCONV: Final = "agentshark.semconv.version"
CAPTURE_FILES: Final = "agentshark.capture.files"
PROJECT: Final = "openinference.project.name"  # Phoenix's project of the spans

# -- GenAI (gen-ai-spans.md, gen-ai-agent-spans.md) --------------------------------------------
OPERATION: Final = "gen_ai.operation.name"
PROVIDER: Final = "gen_ai.provider.name"
REQUEST_MODEL: Final = "gen_ai.request.model"
REQUEST_STREAM: Final = "gen_ai.request.stream"
REQUEST_CHOICES: Final = "gen_ai.request.choice.count"
RESPONSE_MODEL: Final = "gen_ai.response.model"
RESPONSE_ID: Final = "gen_ai.response.id"
FINISH_REASONS: Final = "gen_ai.response.finish_reasons"
TIME_TO_FIRST_CHUNK: Final = "gen_ai.response.time_to_first_chunk"
INPUT_TOKENS: Final = "gen_ai.usage.input_tokens"
OUTPUT_TOKENS: Final = "gen_ai.usage.output_tokens"
CACHE_READ_TOKENS: Final = "gen_ai.usage.cache_read.input_tokens"
CACHE_WRITE_TOKENS: Final = "gen_ai.usage.cache_creation.input_tokens"  # genai repo: cache_write
REASONING_TOKENS: Final = "gen_ai.usage.reasoning.output_tokens"
INPUT_MESSAGES: Final = "gen_ai.input.messages"
OUTPUT_MESSAGES: Final = "gen_ai.output.messages"
SYSTEM_INSTRUCTIONS: Final = "gen_ai.system_instructions"
TOOL_DEFINITIONS: Final = "gen_ai.tool.definitions"
CONVERSATION_ID: Final = "gen_ai.conversation.id"
TOOL_NAME: Final = "gen_ai.tool.name"
TOOL_TYPE: Final = "gen_ai.tool.type"
TOOL_CALL_ID: Final = "gen_ai.tool.call.id"
TOOL_ARGUMENTS: Final = "gen_ai.tool.call.arguments"
TOOL_RESULT: Final = "gen_ai.tool.call.result"
AGENT_NAME: Final = "gen_ai.agent.name"
PROMPT_NAME: Final = "gen_ai.prompt.name"
ERROR_TYPE: Final = "error.type"
SERVER_ADDRESS: Final = "server.address"
SERVER_PORT: Final = "server.port"

# request parameters: the vendor's key (as the report keeps it) -> the semconv name
REQUEST_PARAMS: Final = {
    "temperature": "gen_ai.request.temperature",
    "top_p": "gen_ai.request.top_p",
    "topP": "gen_ai.request.top_p",
    "top_k": "gen_ai.request.top_k",
    "topK": "gen_ai.request.top_k",
    "max_tokens": "gen_ai.request.max_tokens",
    "maxTokens": "gen_ai.request.max_tokens",
    "max_completion_tokens": "gen_ai.request.max_tokens",
    "max_output_tokens": "gen_ai.request.max_tokens",
    "maxOutputTokens": "gen_ai.request.max_tokens",
    "num_predict": "gen_ai.request.max_tokens",
    "frequency_penalty": "gen_ai.request.frequency_penalty",
    "frequencyPenalty": "gen_ai.request.frequency_penalty",
    "presence_penalty": "gen_ai.request.presence_penalty",
    "presencePenalty": "gen_ai.request.presence_penalty",
    "stop": "gen_ai.request.stop_sequences",
    "stop_sequences": "gen_ai.request.stop_sequences",
    "stopSequences": "gen_ai.request.stop_sequences",
    "seed": "gen_ai.request.seed",
}
CHOICE_PARAMS: Final = ("n", "candidateCount")
# nested objects whose keys are request parameters (Gemini, Bedrock Converse, Ollama)
PARAM_GROUPS: Final = ("generationConfig", "inferenceConfig", "options")

# the report's provider -> the gen_ai.provider.name well-known value (others pass as they are)
PROVIDERS: Final = {
    "azure.openai": "azure.ai.openai",
    "azure.ai": "azure.ai.inference",
    "gemini": "gcp.gemini",
    "vertex.gemini": "gcp.vertex_ai",
    "vertex.anthropic": "gcp.vertex_ai",
    "code_assist.gemini": "gcp.gen_ai",
    "mistral": "mistral_ai",
    "xai": "x_ai",
    "moonshot": "moonshot_ai",
    "watsonx": "ibm.watsonx.ai",
}

# the report's operation -> gen_ai.operation.name (others pass as they are)
OPERATIONS: Final = {"completions": "text_completion", "embed": "embeddings"}

# -- MCP (mcp.md) -------------------------------------------------------------------------------
MCP_METHOD: Final = "mcp.method.name"
MCP_SESSION: Final = "mcp.session.id"
MCP_PROTOCOL: Final = "mcp.protocol.version"
MCP_RESOURCE: Final = "mcp.resource.uri"
JSONRPC_ID: Final = "jsonrpc.request.id"
RPC_STATUS: Final = "rpc.response.status_code"
NETWORK_TRANSPORT: Final = "network.transport"
MCP_TOOL_ERROR: Final = "tool_error"  # error.type of a tools/call result with isError

# -- A2A (semantic-conventions-genai docs/gen-ai/a2a.md) ----------------------------------------
A2A_METHOD: Final = "a2a.method.name"
A2A_TASK: Final = "a2a.task.id"
A2A_TASK_STATE: Final = "a2a.task.state"
A2A_MESSAGE: Final = "a2a.message.id"
A2A_PROTOCOL: Final = "a2a.protocol.version"

# -- GraphQL executions (semantic conventions graphql/graphql-spans.md) -------------------------
GRAPHQL_OPERATION_TYPE: Final = "graphql.operation.type"
GRAPHQL_OPERATION_NAME: Final = "graphql.operation.name"
GRAPHQL_DOCUMENT: Final = "graphql.document"
GRAPHQL_ERRORS: Final = "agentshark.graphql.errors"  # the errors, as JSON (not semconv)
GRAPHQL_PARTIAL: Final = "agentshark.graphql.partial"  # data and errors both (not semconv)
GRAPHQL_BATCH: Final = "agentshark.graphql.batch_size"  # operations in a batch (not semconv)

# -- retrieval services (gen-ai-spans.md: retrieval; the rest agentshark's own, not semconv) ----
DATA_SOURCE: Final = "gen_ai.data_source.id"
REQUEST_TOP_K: Final = "gen_ai.request.top_k"
RETRIEVAL_ROLE: Final = "agentshark.retrieval.role"  # vector_store, reranker, web_search, memory
RETRIEVAL_SERVICE: Final = "agentshark.retrieval.service"  # chroma, qdrant, cohere, mem0...
RETRIEVAL_NAMESPACE: Final = "agentshark.retrieval.namespace"  # JSON
RETRIEVAL_FILTER: Final = "agentshark.retrieval.filter"  # JSON
RETRIEVAL_METRIC: Final = "agentshark.retrieval.metric"  # pgvector: l2_distance, cosine_distance...
DB_SYSTEM: Final = "db.system.name"  # OTel database semconv: pgvector's postgresql
DB_QUERY_TEXT: Final = "db.query.text"  # the SQL statement (pgvector)
RETRIEVAL_QUERIES: Final = "agentshark.retrieval.queries"  # JSON: text or vector size
RETRIEVAL_DOCUMENTS: Final = "agentshark.retrieval.documents"  # JSON: the document parts
# -- HTTP executions ----------------------------------------------------------------------------
HTTP_METHOD: Final = "http.request.method"
HTTP_STATUS: Final = "http.response.status_code"
URL_FULL: Final = "url.full"
URL_TEMPLATE: Final = "url.template"  # the route template inferred from the path (trace.routes)
OPERATION_ID: Final = "agentshark.openapi.operation_id"  # named by an OpenAPI document

# -- agentshark's own (evidence a viewer can show; not semconv) ---------------------------------
CALL_ID: Final = "agentshark.call.id"
EXCHANGE_ID: Final = "agentshark.exchange.id"
API: Final = "agentshark.api"
COMPLETE: Final = "agentshark.complete"
ORIGIN: Final = "agentshark.trace.origin"
SYNTHESIZED: Final = "agentshark.synthesized"
INFERRED: Final = "agentshark.tool.inferred"
EVIDENCE: Final = "agentshark.tool.execution_evidence"
CONFIDENCE: Final = "agentshark.tool.confidence"
ID_SOURCE: Final = "agentshark.span_id.source"
LINK_ORIGIN: Final = "agentshark.link.origin"
TIMES_UNKNOWN: Final = "agentshark.times_unknown"
ERROR_MESSAGE: Final = "agentshark.error.message"

# -- OpenInference (--openinference) -----------------------------------------------------------
OI_KIND: Final = "openinference.span.kind"
OI_LLM: Final = "LLM"
OI_TOOL: Final = "TOOL"
OI_AGENT: Final = "AGENT"
OI_CHAIN: Final = "CHAIN"
OI_EMBEDDING: Final = "EMBEDDING"
OI_RETRIEVER: Final = "RETRIEVER"
OI_RERANKER: Final = "RERANKER"
OI_RETRIEVAL_DOCUMENTS: Final = "retrieval.documents"  # .N.document.{id,score,content,metadata}
OI_RERANKER_QUERY: Final = "reranker.query"
OI_RERANKER_MODEL: Final = "reranker.model_name"
OI_RERANKER_TOP_K: Final = "reranker.top_k"
OI_RERANKER_OUTPUT: Final = "reranker.output_documents"  # .N.document.{id,score,content}
OI_MODEL: Final = "llm.model_name"
OI_SYSTEM: Final = "llm.system"
OI_PROVIDER: Final = "llm.provider"
OI_PARAMS: Final = "llm.invocation_parameters"
OI_PROMPT_TOKENS: Final = "llm.token_count.prompt"
OI_COMPLETION_TOKENS: Final = "llm.token_count.completion"
OI_TOTAL_TOKENS: Final = "llm.token_count.total"
OI_CACHE_READ: Final = "llm.token_count.prompt_details.cache_read"
OI_CACHE_WRITE: Final = "llm.token_count.prompt_details.cache_write"
OI_REASONING: Final = "llm.token_count.completion_details.reasoning"
OI_INPUT_MESSAGES: Final = "llm.input_messages"
OI_OUTPUT_MESSAGES: Final = "llm.output_messages"
OI_TOOLS: Final = "llm.tools"
OI_INPUT_VALUE: Final = "input.value"
OI_INPUT_MIME: Final = "input.mime_type"
OI_OUTPUT_VALUE: Final = "output.value"
OI_OUTPUT_MIME: Final = "output.mime_type"
OI_TOOL_NAME: Final = "tool.name"
OI_TOOL_ID: Final = "tool.id"
OI_SESSION: Final = "session.id"
OI_AGENT_NAME: Final = "agent.name"
# the pieces of a flattened message: llm.input_messages.N.message.role ...
OI_ROLE: Final = "message.role"
OI_CONTENT: Final = "message.content"
OI_NAME: Final = "message.name"
OI_TOOL_CALL_ID: Final = "message.tool_call_id"
OI_TOOL_CALLS: Final = "message.tool_calls"
OI_CALL_ID: Final = "tool_call.id"
OI_FUNCTION_NAME: Final = "tool_call.function.name"
OI_FUNCTION_ARGS: Final = "tool_call.function.arguments"
OI_TOOL_SCHEMA: Final = "tool.json_schema"
JSON_MIME: Final = "application/json"
TEXT_MIME: Final = "text/plain"
