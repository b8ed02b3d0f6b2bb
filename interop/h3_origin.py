"""A minimal HTTP/3 origin on aioquic or qh3, HTTP/3 stacks independent of quic-go.

qh3 keeps aioquic's Python API over a QUIC core of its own (Rust), so one
script serves both (--stack). hetquic's interop tests run PCM-QUIC against it: GET /bytes/{n} returns n bytes
where byte i is i % 251 (the same pattern as hetquic's own origin), HEAD
/bytes/{n} its headers, POST /echo the request body back (as hetquic's
origin), anything else 404. It prints "listening" once ready, and logs one line per request:
the client address the server sent its latest datagram to when the response was queued (where
it sends now), method, path, status.

Usage: python3 h3_origin.py HOST PORT CERT.pem KEY.pem [--stack aioquic|qh3] [--no-migration]

--no-migration sends the disable_active_migration transport parameter
(RFC 9000 §18.2): the client must not migrate, and PCM must fall back.
"""
import asyncio
import importlib
import re
import sys

STACK = sys.argv[sys.argv.index("--stack") + 1] if "--stack" in sys.argv else "aioquic"
if STACK not in ("aioquic", "qh3"):
    sys.exit(f"h3_origin.py: --stack {STACK!r}: want aioquic or qh3")
quic_connection = importlib.import_module(STACK + ".quic.connection")
QuicConnectionProtocol = importlib.import_module(STACK + ".asyncio").QuicConnectionProtocol
serve = importlib.import_module(STACK + ".asyncio").serve
H3_ALPN = importlib.import_module(STACK + ".h3.connection").H3_ALPN
H3Connection = importlib.import_module(STACK + ".h3.connection").H3Connection
DataReceived = importlib.import_module(STACK + ".h3.events").DataReceived
HeadersReceived = importlib.import_module(STACK + ".h3.events").HeadersReceived
QuicConfiguration = importlib.import_module(STACK + ".quic.configuration").QuicConfiguration
ProtocolNegotiated = importlib.import_module(STACK + ".quic.events").ProtocolNegotiated


class Sent:
    """The server socket's transport, remembering where the latest datagram went."""

    def __init__(self, transport):
        self._t = transport
        self.last = ("?", 0)

    def sendto(self, data, addr=None):
        self.last = addr
        return self._t.sendto(data, addr)

    def sendto_many(self, datagrams, addr):  # qh3's batched send
        self.last = addr
        return self._t.sendto_many(datagrams, addr)

    def __getattr__(self, name):
        return getattr(self._t, name)

PATTERN = bytes(i % 251 for i in range(251))
MAX_BYTES = 64 << 20


def body(n):
    whole, rest = divmod(n, len(PATTERN))
    return PATTERN * whole + PATTERN[:rest]


class Origin(QuicConnectionProtocol):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._h3 = None
        self._requests = {}  # stream id -> [headers, body so far]

    def transmit(self):
        if self._transport is not None and not isinstance(self._transport, Sent):
            self._transport = Sent(self._transport)
            if getattr(self, "_sendto_many", None) is not None:
                self._sendto_many = self._transport.sendto_many
        super().transmit()

    def quic_event_received(self, event):
        if isinstance(event, ProtocolNegotiated) and event.alpn_protocol in H3_ALPN:
            self._h3 = H3Connection(self._quic)
        if self._h3 is None:
            return
        for ev in self._h3.handle_event(event):
            if isinstance(ev, HeadersReceived):
                self._requests[ev.stream_id] = [dict(ev.headers), b""]
            elif isinstance(ev, DataReceived) and ev.stream_id in self._requests:
                self._requests[ev.stream_id][1] += ev.data
            else:
                continue
            if ev.stream_ended:
                headers, data = self._requests.pop(ev.stream_id)
                self._respond(ev.stream_id, headers, data)

    def _respond(self, stream_id, headers, request_body):
        method = headers.get(b":method", b"").decode()
        path = headers.get(b":path", b"").decode()
        m = re.fullmatch(r"/bytes/(\d+)", path)
        if method in ("GET", "HEAD") and m and int(m.group(1)) <= MAX_BYTES:
            status, data = b"200", body(int(m.group(1)))
        elif method == "POST" and path == "/echo":
            status, data = b"200", request_body
        else:
            status, data = b"404", b"not found\n"
        self._h3.send_headers(stream_id, [(b":status", status), (b"content-length", str(len(data)).encode())])
        self._h3.send_data(stream_id, b"" if method == "HEAD" else data, end_stream=True)
        self.transmit()
        host, port = self._transport.last[:2]
        print(f"{host}:{port} {method} {path} {status.decode()}", flush=True)


async def main(host, port, cert, key):
    config = QuicConfiguration(is_client=False, alpn_protocols=H3_ALPN)
    config.load_cert_chain(cert, key)
    await serve(host, port, configuration=config, create_protocol=Origin)
    print("listening", flush=True)
    await asyncio.Future()


def disable_migration():
    """Make every connection announce disable_active_migration: neither
    stack has a setting for it, so wrap the transport parameters it sends."""
    params = quic_connection.QuicTransportParameters

    def with_flag(**kwargs):
        return params(disable_active_migration=True, **kwargs)

    quic_connection.QuicTransportParameters = with_flag


if __name__ == "__main__":
    if "--no-migration" in sys.argv[5:]:
        if STACK != "aioquic":
            sys.exit("h3_origin.py: --no-migration needs --stack aioquic (qh3 builds its parameters natively)")
        disable_migration()
    try:
        asyncio.run(main(sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]))
    except KeyboardInterrupt:
        pass
