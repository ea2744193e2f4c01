"""libzmq peers for the interoperability tests of package zmq.

Run with Debian's interpreter in isolated mode, /usr/bin/python3 -I, so
that only python3-zmq (pyzmq on libzmq 4.3) is imported. Each mode
prints JSON lines on stdout; the Go test reads them.

    sub ENDPOINT N PREFIX...   connect a SUB, take N messages, print each
    pub N PREFIX...            bind an XPUB on a free port, print it, wait for
                               a subscription to each PREFIX, then send N
                               two-frame messages round-robin over
                               PREFIX+"x" topics; then wait for stdin to close
    forward XSUB XPUB          a publisher (XPUB) behind a proxy and a SUB in
                               front of it: a subscription made after
                               start-up must reach the publisher
    wide FRAMES                bind an XPUB on a free port, print it, wait for
                               a subscription, then send one message of
                               FRAMES frames (topic "t", one byte each) and
                               three two-frame ones; then wait for stdin to
                               close
    worker ENDPOINT NAME DELAY a load-balancing worker (REQ): ready, then for
                               each task print it, take DELAY seconds and
                               answer done + header
    hbsub ENDPOINT IVL TIMEOUT TTL
                               a SUB of every topic with ZMQ_HEARTBEAT_IVL,
                               _TIMEOUT and _TTL (milliseconds; 0 leaves the
                               option unset) connected to ENDPOINT; prints
                               each payload received and each event of its
                               socket monitor, until stdin closes
    resub ENDPOINT             a SUB connected to ENDPOINT that subscribes to
                               "A" twice, unsubscribes from it twice, then
                               subscribes to "B"; prints ready, then waits
                               for stdin to close
    subunsub ENDPOINT PREFIX...
                               a SUB of PREFIXES connected to ENDPOINT; prints
                               ready, then for each line "sub P" or "unsub P"
                               subscribes to or unsubscribes from P and
                               prints done
    burst ENDPOINT N           N SUBs of every topic connecting to ENDPOINT at
                               once; prints ready, then waits for stdin to
                               close
    hbpub IVL TIMEOUT TTL [ENDPOINT]
                               an XPUB with those options bound on a free
                               port (or ENDPOINT): prints it, each
                               subscription and each monitor event; sends
                               [b"t", PAYLOAD] for each line "send PAYLOAD"
                               of stdin, until it closes
    monsub ENDPOINT PREFIX...  a SUB of PREFIXES connected to ENDPOINT that
                               reads all the time: prints each monitor event
                               and each message's topic and payload, until
                               stdin closes
    latesub ENDPOINT PREFIX... monsub, but its application calls into its
                               socket only once stdin says "read": libzmq
                               sends a SUB's subscriptions again on a new
                               connection only then (the reconnect's hiccup
                               waits in the socket's mailbox)
"""

import json
import os
import struct
import sys
import time

import zmq
from zmq.utils.monitor import recv_monitor_message

HEADER = struct.Struct(">BBBBIQQq")  # magic x2, version, kind, feed, session, seq, time


def out(**kv):
    sys.stdout.write(json.dumps(kv) + "\n")
    sys.stdout.flush()


def header(frame):
    m0, m1, version, kind, feed, session, seq, t = HEADER.unpack_from(frame)
    if (m0, m1, version) != (0xB7, 0x5A, 1):
        raise ValueError("not a brokerless header frame: %r" % frame[:4])
    return kind, feed, session, seq


def sub(endpoint, n, prefixes):
    ctx = zmq.Context()
    s = ctx.socket(zmq.SUB)
    for p in prefixes:
        s.setsockopt(zmq.SUBSCRIBE, p.encode())
    s.connect(endpoint)
    out(ready=True)
    got = 0
    while got < n:
        frames = s.recv_multipart()
        if len(frames) == 2:  # heartbeat or end: no payload
            continue
        topic, hdr, payload = frames
        kind, feed, session, seq = header(hdr)
        out(topic=topic.decode(), kind=kind, feed=feed, session=session, seq=seq, payload=payload.decode())
        got += 1
    s.close(linger=0)
    ctx.term()


def pub(n, prefixes):
    ctx = zmq.Context()
    s = ctx.socket(zmq.XPUB)
    port = s.bind_to_random_port("tcp://127.0.0.1")
    out(endpoint="tcp://127.0.0.1:%d" % port)
    want = {p.encode() for p in prefixes}
    while want:
        msg = s.recv()
        if msg[:1] == b"\x01":
            want.discard(msg[1:])
    topics = [(p + "x").encode() for p in prefixes] + [b"other"]
    for i in range(n):
        t = topics[i % len(topics)]
        s.send_multipart([t, b"%d" % i])
    out(sent=n)
    sys.stdin.read()
    s.close(linger=1000)
    ctx.term()


def wait_sub(xpub, want, timeout=10.0):
    """Read subscription messages at the publisher until want arrives."""
    deadline = time.time() + timeout
    seen = []
    while time.time() < deadline:
        if xpub.poll(100):
            msg = xpub.recv()
            seen.append(msg)
            if msg == want:
                return seen
    raise SystemExit("publisher never saw %r (saw %r)" % (want, seen))


def take(sub_sock, topic, pub_sock, timeout=10.0):
    """Publish on topic until the subscriber receives it."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        pub_sock.send_multipart([topic, b"payload"])
        if sub_sock.poll(50):
            frames = sub_sock.recv_multipart()
            if frames[0] == topic:
                return
    raise SystemExit("subscriber never got %r" % topic)


def forward(xsub_ep, xpub_ep):
    ctx = zmq.Context()
    p = ctx.socket(zmq.XPUB)  # a publisher that shows what reaches it
    p.connect(xsub_ep)
    s = ctx.socket(zmq.SUB)
    s.connect(xpub_ep)
    s.setsockopt(zmq.SUBSCRIBE, b"a.")
    seen = wait_sub(p, b"\x01a.")
    take(s, b"a.1", p)
    s.setsockopt(zmq.SUBSCRIBE, b"b.")  # after start-up
    seen += wait_sub(p, b"\x01b.")
    take(s, b"b.1", p)
    s.setsockopt(zmq.UNSUBSCRIBE, b"a.")
    seen += wait_sub(p, b"\x00a.")
    out(publisher_saw=[m.decode("latin-1") for m in seen])
    s.close(linger=0)
    p.close(linger=0)
    ctx.term()


def worker(endpoint, name, delay):
    ctx = zmq.Context()
    s = ctx.socket(zmq.REQ)
    s.connect(endpoint)
    s.send_multipart([b"ready"])
    while True:
        topic, hdr, payload = s.recv_multipart()
        kind, feed, session, seq = header(hdr)
        out(worker=name, seq=seq, task=payload.decode())
        time.sleep(delay)
        s.send_multipart([b"done", hdr])


def wide(frames):
    ctx = zmq.Context()
    s = ctx.socket(zmq.XPUB)
    port = s.bind_to_random_port("tcp://127.0.0.1")
    out(endpoint="tcp://127.0.0.1:%d" % port)
    while s.recv()[:1] != b"\x01":
        pass
    s.send_multipart([b"t"] + [b"x"] * (frames - 1))
    for i in range(3):
        s.send_multipart([b"t", b"%d" % i])
    out(sent=4)
    sys.stdin.read()
    s.close(linger=1000)
    ctx.term()


EVENTS = {
    getattr(zmq, "EVENT_" + name): name.lower()
    for name in (
        "CONNECTED", "CONNECT_DELAYED", "CONNECT_RETRIED", "LISTENING",
        "BIND_FAILED", "ACCEPTED", "ACCEPT_FAILED", "CLOSED", "CLOSE_FAILED",
        "DISCONNECTED", "MONITOR_STOPPED", "HANDSHAKE_FAILED_NO_DETAIL",
        "HANDSHAKE_SUCCEEDED", "HANDSHAKE_FAILED_PROTOCOL",
        "HANDSHAKE_FAILED_AUTH",
    )
    if hasattr(zmq, "EVENT_" + name)
}


def heartbeats(s, ivl, timeout, ttl):
    """Set the ZMTP 3.1 heartbeat options given (milliseconds, 0: unset)."""
    for opt, ms in ((zmq.HEARTBEAT_IVL, ivl), (zmq.HEARTBEAT_TIMEOUT, timeout), (zmq.HEARTBEAT_TTL, ttl)):
        if ms:
            s.setsockopt(opt, ms)


def monitored(kind):
    """A new socket of kind and its monitor, attached before the socket
    binds or connects: attached later, it misses the events of a peer
    that connects and completes its handshake at once."""
    ctx = zmq.Context()
    s = ctx.socket(kind)
    return ctx, s, s.get_monitor_socket()


def watch(s, mon, on_message, on_line):
    """Print s's monitor events and hand its messages and stdin's lines
    on, until stdin closes."""
    start = time.monotonic()
    pending = b""
    poller = zmq.Poller()
    poller.register(s, zmq.POLLIN)
    poller.register(mon, zmq.POLLIN)
    poller.register(sys.stdin.fileno(), zmq.POLLIN)
    while True:
        ready = dict(poller.poll())
        if mon in ready:
            ev = recv_monitor_message(mon)
            out(event=EVENTS.get(ev["event"], str(ev["event"])), ms=round((time.monotonic() - start) * 1000))
        if s in ready:
            on_message(s.recv_multipart())
        if sys.stdin.fileno() in ready:
            data = os.read(sys.stdin.fileno(), 4096)  # not readline: its buffer hides lines from poll
            if not data:
                break
            pending += data
            *lines, pending = pending.split(b"\n")
            for line in lines:
                on_line(line.decode())
    s.disable_monitor()
    mon.close(linger=0)
    s.close(linger=0)


def hbsub(endpoint, ivl, timeout, ttl):
    ctx, s, mon = monitored(zmq.SUB)
    heartbeats(s, ivl, timeout, ttl)
    s.setsockopt(zmq.SUBSCRIBE, b"")
    s.connect(endpoint)
    watch(s, mon, lambda frames: out(msg=frames[-1].decode("latin-1")), lambda line: None)
    ctx.term()


def hbpub(ivl, timeout, ttl, endpoint=None):
    ctx, s, mon = monitored(zmq.XPUB)
    heartbeats(s, ivl, timeout, ttl)
    if endpoint:
        s.bind(endpoint)
    else:
        endpoint = "tcp://127.0.0.1:%d" % s.bind_to_random_port("tcp://127.0.0.1")
    out(endpoint=endpoint)

    def send(line):
        cmd, _, payload = line.partition(" ")
        if cmd != "send":
            raise SystemExit("unknown command %r" % line)
        s.send_multipart([b"t", payload.encode()])
        out(sent=payload)

    watch(s, mon, lambda frames: out(subscribed=frames[0][1:].decode("latin-1")) if frames[0][:1] == b"\x01" else None, send)
    ctx.term()


def monsub(endpoint, prefixes, late=False):
    ctx, s, mon = monitored(zmq.SUB)
    for p in prefixes:
        s.setsockopt(zmq.SUBSCRIBE, p.encode())
    s.connect(endpoint)
    out(ready=True)
    if late:
        pending = b""
        while b"read" not in pending.split(b"\n"):
            data = os.read(sys.stdin.fileno(), 4096)
            if not data:
                raise SystemExit("stdin closed before read")
            pending += data
        out(reading=True)

    def message(frames):
        if len(frames) == 3:  # not a heartbeat or an end
            out(topic=frames[0].decode("latin-1"), msg=frames[-1].decode("latin-1"))

    watch(s, mon, message, lambda line: None)
    ctx.term()


def resub(endpoint):
    ctx = zmq.Context()
    s = ctx.socket(zmq.SUB)
    s.connect(endpoint)
    for opt in (zmq.SUBSCRIBE, zmq.SUBSCRIBE, zmq.UNSUBSCRIBE, zmq.UNSUBSCRIBE):
        s.setsockopt(opt, b"A")
    s.setsockopt(zmq.SUBSCRIBE, b"B")
    out(ready=True)
    sys.stdin.read()
    s.close(linger=0)
    ctx.term()


def subunsub(endpoint, prefixes):
    # A SUB of PREFIXES that, for each line "sub P" or "unsub P" read,
    # subscribes to or unsubscribes from P.
    ctx = zmq.Context()
    s = ctx.socket(zmq.SUB)
    for p in prefixes:
        s.setsockopt(zmq.SUBSCRIBE, p.encode())
    s.connect(endpoint)
    out(ready=True)
    for line in sys.stdin:
        op, p = line.split()
        s.setsockopt(zmq.SUBSCRIBE if op == "sub" else zmq.UNSUBSCRIBE, p.encode())
        out(done=line.strip())
    s.close(linger=0)
    ctx.term()


def burst(endpoint, n):
    # N SUBs of every topic connecting to ENDPOINT at once (libzmq's
    # default reconnect interval, 100 ms, no backoff).
    ctx = zmq.Context()
    subs = []
    for _ in range(n):
        s = ctx.socket(zmq.SUB)
        s.setsockopt(zmq.SUBSCRIBE, b"")
        subs.append(s)
    for s in subs:
        s.connect(endpoint)
    out(ready=True)
    sys.stdin.read()
    for s in subs:
        s.close(linger=0)
    ctx.term()


def hbmulti(n, size):
    # A PUB heartbeating every 5 ms: libzmq sends a PING at the next
    # frame boundary, inside a multi-frame message too.
    ctx = zmq.Context()
    s = ctx.socket(zmq.XPUB)
    s.setsockopt(zmq.HEARTBEAT_IVL, 5)
    s.setsockopt(zmq.HEARTBEAT_TIMEOUT, 60000)
    s.setsockopt(zmq.SNDHWM, 0)
    port = s.bind_to_random_port("tcp://127.0.0.1")
    out(endpoint="tcp://127.0.0.1:%d" % port)
    s.recv()  # the subscription
    body = b"x" * size
    for i in range(n):
        s.send_multipart([b"t", body, body, b"%d" % i])
    out(sent=n)
    sys.stdin.read()
    s.close(linger=1000)
    ctx.term()


def main():
    mode, args = sys.argv[1], sys.argv[2:]
    if mode == "sub":
        sub(args[0], int(args[1]), args[2:])
    elif mode == "pub":
        pub(int(args[0]), args[1:])
    elif mode == "forward":
        forward(args[0], args[1])
    elif mode == "wide":
        wide(int(args[0]))
    elif mode == "worker":
        worker(args[0], args[1], float(args[2]))
    elif mode == "hbsub":
        hbsub(args[0], *map(int, args[1:4]))
    elif mode == "resub":
        resub(args[0])
    elif mode == "subunsub":
        subunsub(args[0], args[1:])
    elif mode == "burst":
        burst(args[0], int(args[1]))
    elif mode == "hbmulti":
        hbmulti(int(args[0]), int(args[1]))
    elif mode == "hbpub":
        hbpub(*map(int, args[0:3]), *args[3:4])
    elif mode == "monsub":
        monsub(args[0], args[1:])
    elif mode == "latesub":
        monsub(args[0], args[1:], late=True)
    else:
        raise SystemExit("unknown mode " + mode)


if __name__ == "__main__":
    main()
