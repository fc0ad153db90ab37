#!/usr/bin/env python3
"""One TCP stream between two emulated hosts: the ceiling a collective over TCP can reach.

    stream.py recv ADDR PORT          accept one connection, print "BYTES SECONDS GBITS"
    stream.py send ADDR PORT MIB      connect (retrying while refused), send MIB MiB, close

The receiver times from its first byte to EOF, so connection set-up does not count; 1 MiB
buffers, as an iperf-style single stream.
"""
import socket
import sys
import time


def receive(addr, port):
    server = socket.create_server((addr, port))
    conn, _ = server.accept()
    view = memoryview(bytearray(1 << 20))
    total = conn.recv_into(view)
    start = time.perf_counter()
    while True:
        n = conn.recv_into(view)
        if n == 0:
            break
        total += n
    elapsed = time.perf_counter() - start
    print(f"{total} {elapsed:.6f} {total * 8 / elapsed / 1e9:.2f}")


def send(addr, port, mib):
    chunk = memoryview(bytes(1 << 20))
    for _ in range(200):
        try:
            conn = socket.create_connection((addr, port))
            break
        except ConnectionRefusedError:
            time.sleep(0.05)
    else:
        sys.exit(f"stream.py: nothing listens on {addr}:{port}")
    for _ in range(mib):
        conn.sendall(chunk)
    conn.close()


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "recv":
        receive(sys.argv[2], int(sys.argv[3]))
    elif len(sys.argv) == 5 and sys.argv[1] == "send":
        send(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    else:
        sys.exit(__doc__)
