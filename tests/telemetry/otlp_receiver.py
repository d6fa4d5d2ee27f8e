#!/usr/bin/env python3
"""An OTLP trace receiver for tests: decodes each export with the official OpenTelemetry
protobuf definitions (opentelemetry-proto) — a POST /v1/traces body over HTTP, or with
`--grpc` a TraceService/Export call over gRPC (grpcio) — and prints one JSON line per span
on stdout: trace_id, span_id, parent_span_id, name, kind and attributes (strings, ints,
bools, doubles), plus the resource's service.name, the transport it came by and, over
HTTP, the path posted to and the export's `x-api-key` header (null when absent).

Usage: python3 otlp_receiver.py [--grpc]    (prints "listening PORT" first; accepts each
export; ends when stdin closes)
"""

from __future__ import annotations

import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from opentelemetry.proto.collector.trace.v1 import trace_service_pb2

lock = threading.Lock()


def value_of(any_value):
    kind = any_value.WhichOneof("value")
    return getattr(any_value, kind) if kind else None


def report(request, transport: str, extra: dict | None = None) -> None:
    """Prints each span of an ExportTraceServiceRequest as one JSON line."""
    for resource_spans in request.resource_spans:
        resource = {a.key: value_of(a.value) for a in resource_spans.resource.attributes}
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                line = {
                    "service": resource.get("service.name"),
                    "trace_id": span.trace_id.hex(),
                    "span_id": span.span_id.hex(),
                    "parent_span_id": span.parent_span_id.hex(),
                    "name": span.name,
                    "kind": span.kind,
                    "attributes": {a.key: value_of(a.value) for a in span.attributes},
                    "transport": transport,
                    **(extra or {}),
                }
                with lock:
                    print(json.dumps(line), flush=True)


class Handler(BaseHTTPRequestHandler):
    def do_POST(self):  # noqa: N802 - the http.server API
        length = int(self.headers.get("content-length", "0"))
        body = self.rfile.read(length)
        request = trace_service_pb2.ExportTraceServiceRequest()
        request.ParseFromString(body)
        report(request, "http", {"path": self.path, "api_key": self.headers.get("x-api-key")})
        answer = trace_service_pb2.ExportTraceServiceResponse().SerializeToString()
        self.send_response(200)
        self.send_header("content-type", "application/x-protobuf")
        self.send_header("content-length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, *args):  # quiet: stdout is the spans
        pass


def serve_grpc() -> None:
    from concurrent import futures

    import grpc
    from opentelemetry.proto.collector.trace.v1 import trace_service_pb2_grpc

    class Traces(trace_service_pb2_grpc.TraceServiceServicer):
        def Export(self, request, context):  # noqa: N802 - the generated API
            report(request, "grpc")
            return trace_service_pb2.ExportTraceServiceResponse()

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    trace_service_pb2_grpc.add_TraceServiceServicer_to_server(Traces(), server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    print(f"listening {port}", flush=True)
    sys.stdin.read()
    server.stop(None)


def main() -> None:
    if "--grpc" in sys.argv[1:]:
        serve_grpc()
        return
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    print(f"listening {server.server_address[1]}", flush=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    sys.stdin.read()
    server.shutdown()


if __name__ == "__main__":
    main()
