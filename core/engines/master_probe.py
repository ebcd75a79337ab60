"""Is a ``host:port`` a Spark RPC endpoint? Asked without a JVM, before a session starts.

A port that accepts TCP but is no Spark master (another service, a stale forward) would have
Spark's client retry its registration for about a minute and end in a Py4J stack trace. So
lakectl sends one request in Spark's own RPC framing (``org.apache.spark.network.protocol``)
and waits for Spark's answer:

* a frame: 8-byte big-endian length (itself included), a 1-byte message type, then the
  message; an ``RpcRequest`` (type 3) is an 8-byte request id, a 4-byte body length and the
  body;
* the body is a ``RequestMessage`` as ``NettyRpcEnv`` reads it: no sender address (a false
  boolean), the receiver's address (true, host as Java modified UTF-8, port as int) and
  endpoint name, then the content in Java serialization, here a ``java.lang.String``;
* the endpoint named, ``lakectl-probe``, exists nowhere, so Spark answers at once with an
  ``RpcFailure`` (type 5) echoing the request id ("Could not find lakectl-probe."), without
  logging a stack trace on the master. Any Spark RPC server answers so; a worker's port
  passes too, and Spark's own registration then tells.
"""

from __future__ import annotations

import socket
import struct
import time

RPC_REQUEST, RPC_RESPONSE, RPC_FAILURE = 3, 4, 5
PROBE_ID = int.from_bytes(b"lakectl", "big")
_HEADER = 8 + 1 + 8  # frame length, message type, request id


def _java_utf(text: str) -> bytes:
    data = text.encode("utf-8")  # ASCII here: modified UTF-8 differs only for NUL and beyond the BMP
    return struct.pack(">H", len(data)) + data


def probe_request(host: str, port: int) -> bytes:
    """The bytes of the one request sent."""
    content = b"\xac\xed\x00\x05" + b"\x74" + _java_utf("lakectl")  # stream header, TC_STRING
    body = b"\x00" + b"\x01" + _java_utf(host) + struct.pack(">i", port) + _java_utf("lakectl-probe") + content
    message = struct.pack(">bqi", RPC_REQUEST, PROBE_ID, len(body)) + body
    return struct.pack(">q", 8 + len(message)) + message


def answers_as_spark(host: str, port: int, connect_timeout: float, timeout: float) -> str | None:
    """None when ``host:port`` answers the probe as Spark does within ``timeout`` seconds,
    else why not (in words for an error message). Connection failures raise OSError, as
    ``socket.create_connection``."""
    with socket.create_connection((host, port), timeout=connect_timeout) as conn:
        conn.sendall(probe_request(host, port))
        deadline = time.monotonic() + timeout
        got = b""
        while len(got) < _HEADER:
            left = deadline - time.monotonic()
            if left <= 0:
                return f"it accepted the connection but said nothing in {timeout:g} s"
            conn.settimeout(left)
            try:
                chunk = conn.recv(4096)
            except socket.timeout:
                continue
            if not chunk:
                return "it closed the connection without an answer" if not got else "it answered, but not as Spark"
            got += chunk
    length, kind, request = struct.unpack(">qbq", got[:_HEADER])
    if kind in (RPC_RESPONSE, RPC_FAILURE) and request == PROBE_ID and length >= _HEADER:
        return None
    return "it answered, but not as Spark"
