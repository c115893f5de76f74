"""Local OTLP receivers on loopback for the push tests: OTLP/HTTP (the stdlib's HTTP server)
and OTLP/gRPC (grpcio with the official ``TraceService`` from opentelemetry-proto). Each
decodes what it received into ``ExportTraceServiceRequest`` messages."""

from __future__ import annotations

import gzip
import threading
from collections.abc import Iterator
from concurrent import futures
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import grpc
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2_grpc
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTracePartialSuccess,
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: bytes  # as decoded from gzip
    message: ExportTraceServiceRequest | None


@dataclass
class Receiver:
    url: str
    received: list[Received] = field(default_factory=list)
    status: int = 200  # what the HTTP receiver answers
    answer: bytes = b""
    partial: ExportTracePartialSuccess | None = None


@contextmanager
def http_receiver() -> Iterator[Receiver]:
    receiver = Receiver(url="")

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            data = self.rfile.read(int(self.headers["content-length"]))
            if self.headers.get("content-encoding") == "gzip":
                data = gzip.decompress(data)
            message = None
            if self.headers.get("content-type") == "application/x-protobuf":
                message = ExportTraceServiceRequest.FromString(data)
            headers = {k.lower(): v for k, v in self.headers.items()}
            receiver.received.append(Received(self.path, headers, data, message))
            if receiver.status != 200:
                self.send_response(receiver.status)
                self.send_header("content-type", "text/plain")
                self.end_headers()
                self.wfile.write(receiver.answer)
                return
            response = ExportTraceServiceResponse()
            if receiver.partial is not None:
                response.partial_success.CopyFrom(receiver.partial)
            body = response.SerializeToString()
            self.send_response(200)
            self.send_header("content-type", "application/x-protobuf")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    receiver.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield receiver
    finally:
        server.shutdown()
        server.server_close()


@contextmanager
def grpc_receiver() -> Iterator[Receiver]:
    receiver = Receiver(url="")

    class Service(trace_service_pb2_grpc.TraceServiceServicer):
        def Export(
            self, request: ExportTraceServiceRequest, context: grpc.ServicerContext
        ) -> ExportTraceServiceResponse:
            headers = {k: str(v) for k, v in context.invocation_metadata()}
            receiver.received.append(Received("", headers, b"", request))
            return ExportTraceServiceResponse()

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    trace_service_pb2_grpc.add_TraceServiceServicer_to_server(Service(), server)  # type: ignore[no-untyped-call]
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    receiver.url = f"http://127.0.0.1:{port}"
    try:
        yield receiver
    finally:
        server.stop(grace=None)
