"""The wire: bad frames get specific error frames, and the connection and daemon survive."""

from __future__ import annotations

import os
import socket
import struct
import subprocess

import msgpack
import pytest
from memoryd_client import wire


def connect(path) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(10)
    sock.connect(str(path))
    return sock


def read_reply(sock: socket.socket) -> dict:
    header = b""
    while len(header) < 4:
        header += sock.recv(4 - len(header))
    (length,) = struct.unpack(">I", header)
    body = b""
    while len(body) < length:
        body += sock.recv(length - len(body))
    return msgpack.unpackb(body, raw=False)


def send_raw(sock: socket.socket, body: bytes) -> None:
    sock.sendall(struct.pack(">I", len(body)) + body)


def status_works(sock: socket.socket) -> bool:
    sock.sendall(wire.pack({"id": 99, "method": "status", "params": {}}))
    reply = read_reply(sock)
    return reply["id"] == 99 and "version" in reply["result"]


@pytest.mark.parametrize("body, code, message", [
    (msgpack.packb([1, 2, 3]), "bad_frame", "must be a msgpack map"),
    (b"\xc1\xc1\xc1", "bad_frame", "not valid msgpack"),
    (msgpack.packb({"method": "status"}), "bad_frame", "id"),
    (msgpack.packb({"id": 1}), "bad_frame", "method"),
    (msgpack.packb({"id": 1, "method": "explode"}), "unknown_method", "unknown method 'explode'"),
    (msgpack.packb({"id": 1, "method": "search", "params": [1]}), "bad_params", "params must be a map"),
    (msgpack.packb({"id": 1, "method": "remember", "params": {"agent": "a"}}), "bad_params", "text is required"),
    (msgpack.packb({"id": 1, "method": "remember_many", "params": {"entries": [1, 2]}}), "bad_params",
     "remember_many: entries[0] must be a map, got int"),
])
def test_bad_frame_gets_a_specific_error_and_the_connection_survives(daemon, body, code, message) -> None:
    with connect(daemon.socket) as sock:
        send_raw(sock, body)
        reply = read_reply(sock)
        assert reply["error"]["code"] == code
        assert message in reply["error"]["message"]
        assert status_works(sock)


def test_oversized_frame_is_refused_and_the_connection_survives(daemon) -> None:
    with connect(daemon.socket) as sock:
        size = wire.MAX_FRAME_BYTES + 1
        sock.sendall(struct.pack(">I", size) + b"\x00" * size)
        reply = read_reply(sock)
        assert reply["error"]["code"] == "frame_too_large"
        assert status_works(sock)


def test_truncated_frame_and_abrupt_close_do_not_hurt_the_daemon(daemon) -> None:
    with connect(daemon.socket) as sock:
        sock.sendall(struct.pack(">I", 100) + b"\x80")
    with connect(daemon.socket) as sock:
        assert status_works(sock)


def test_pipelined_requests_are_answered_in_order(daemon) -> None:
    with connect(daemon.socket) as sock:
        sock.sendall(b"".join(wire.pack({"id": i, "method": "status", "params": {}}) for i in range(5)))
        assert [read_reply(sock)["id"] for _ in range(5)] == list(range(5))


def test_socket_and_directory_are_private(daemon) -> None:
    assert os.stat(daemon.socket).st_mode & 0o777 == 0o600
    assert os.stat(daemon.socket.parent).st_mode & 0o777 == 0o700


SYSTEM_PYTHON = "/usr/bin/python3"


@pytest.mark.skipif(os.getuid() != 0 or not os.path.exists(SYSTEM_PYTHON),
                    reason="needs root and a system python to connect as another uid")
def test_other_users_are_refused(daemon) -> None:
    # open the file permissions so that only the peer-credential check stands in the way
    os.chmod(daemon.socket.parent, 0o755)
    os.chmod(daemon.socket, 0o777)
    frame = wire.pack({"id": 1, "method": "status", "params": {}})
    code = (  # standard library only: it runs as another user, outside our venv
        "import socket, sys\n"
        "s = socket.socket(socket.AF_UNIX); s.settimeout(10); s.connect(sys.argv[1])\n"
        "try:\n"
        "    s.sendall(bytes.fromhex(sys.argv[2]))\n"
        "except BrokenPipeError:\n"
        "    pass  # refused before it spoke\n"
        "data = b''\n"
        "while True:\n"
        "    chunk = s.recv(65536)\n"
        "    if not chunk: break\n"
        "    data += chunk\n"
        "print(data.hex())\n"
    )
    result = subprocess.run([SYSTEM_PYTHON, "-c", code, str(daemon.socket), frame.hex()],
                            user=65534, capture_output=True, text=True, timeout=30)
    assert result.returncode == 0, result.stderr
    reply = msgpack.unpackb(bytes.fromhex(result.stdout.strip())[4:], raw=False)
    assert reply["error"]["code"] == "forbidden"
    assert "uid 65534 refused" in reply["error"]["message"]


def test_a_request_sent_behind_a_refused_bind_is_not_served(daemon, client) -> None:
    """The client sends its first request right behind its bind; when the bind is refused,
    that request must not run under the connection's default identity (here: a note stored
    for a channel the connection never got). A later bind that succeeds lifts it."""
    remember = {"agent": "designer", "category": "notes", "text": "written behind a refused bind"}
    with connect(daemon.socket) as sock:
        sock.sendall(wire.pack({"id": 1, "method": "bind", "params": {"channel": "telepathy"}})
                     + wire.pack({"id": 2, "method": "remember", "params": remember}))
        refused, behind = read_reply(sock), read_reply(sock)
        assert refused["id"] == 1 and refused["error"]["code"] == "bad_params"
        assert behind["id"] == 2 and behind["error"]["code"] == "forbidden"
        assert "bind was refused" in behind["error"]["message"]
        assert client.search("written behind a refused bind", agent="designer")["hits"] == []
        sock.sendall(wire.pack({"id": 3, "method": "bind", "params": {"channel": "cli"}})
                     + wire.pack({"id": 4, "method": "remember", "params": remember}))
        assert "error" not in read_reply(sock)
        assert read_reply(sock)["result"]["stored"] is True


def test_threads_sharing_one_client_each_get_their_own_reply(daemon) -> None:
    """A program's threads (an MCP server's tool calls) share one Client: its calls are
    serialised. Unserialised, their frames interleaved on the shared connections ("reply id 1
    does not match request 3") and one thread closed the socket under the others."""
    import threading

    from memoryd_client import Client, MemorydError

    failures: list[str] = []
    stored: list[str] = []

    def work(number: int) -> None:
        for i in range(15):
            try:
                text = f"thread {number} writes note {i} about the shared client"
                reply = memory.remember(f"t{number % 3}", "notes", text)
                assert reply["stored"] and reply["entry"]["text"] == text, reply
                stored.append(reply["entry"]["id"])
                assert memory.get(reply["entry"]["id"])["text"] == text
            except MemorydError as exc:
                failures.append(exc.message)

    with Client(daemon.socket, timeout_s=10, cwd=None) as memory:
        threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
        assert failures == []
        assert len(set(stored)) == 8 * 15
        listed = memory.list_entries(agents=["t0", "t1", "t2"], limit=1000)
        assert listed["total"] == 8 * 15


def test_a_connection_that_breaks_during_a_call_is_not_said_to_be_no_daemon(tmp_path) -> None:
    """Only a socket nobody listens on is "memoryd is not running"; a connection reset while a
    request was out says that it broke, and that the request may have been carried out."""
    import threading

    from memoryd_client import Client, DaemonUnreachableError

    path = str(tmp_path / "s.sock")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(1)

    def reset_on_first_frame() -> None:
        conn, _ = listener.accept()
        conn.recv(2)  # the rest of the frame left unread: closing resets the connection
        conn.close()

    server = threading.Thread(target=reset_on_first_frame)
    server.start()
    with Client(path, timeout_s=10) as memory, \
            pytest.raises(DaemonUnreachableError) as broken:
        memory.remember("a", "notes", "x" * 300_000)
    server.join(timeout=10)
    listener.close()
    assert "not running" not in broken.value.message
    assert f"the connection to memoryd on {path} failed during 'remember'" \
        in broken.value.message
    assert "may have been carried out" in broken.value.message
    with Client(path) as memory, pytest.raises(DaemonUnreachableError) as gone:
        memory.status()
    assert f"memoryd is not running on {path}" in gone.value.message


def test_an_oversized_header_with_no_body_behind_it_is_answered_at_once(daemon) -> None:
    """A header announcing 9 MiB with no body sent got nothing: the connection closed 7 s
    later without a word. The refusal comes first now, the body is skipped after it."""
    with connect(daemon.socket) as sock:
        sock.settimeout(3)
        sock.sendall(struct.pack(">I", 9 << 20))
        reply = read_reply(sock)
        assert reply["id"] is None and reply["error"]["code"] == "frame_too_large"
        assert f"frame of {9 << 20} bytes exceeds the limit" in reply["error"]["message"]
