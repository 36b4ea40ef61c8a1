"""What a hostile peer does to the driver's port: the program a test host runs."""


def flood_program(port, silent, trickle, seconds, driver="10.77.0.1"):
    """Python source that opens `silent` connections that never speak and
    `trickle` that announce a 1000-byte frame and send one byte a second,
    holds them `seconds`, then exits."""
    return f"""
import socket, threading, time
socks = [socket.create_connection(("{driver}", {port}), timeout=5) for _ in range({silent})]
def trickle():
    s = socket.create_connection(("{driver}", {port}), timeout=5)
    s.sendall(bytes([0xe8, 0x03, 0, 0]))
    end = time.time() + {seconds}
    while time.time() < end:
        try:
            s.sendall(b"x")
        except OSError:
            return
        time.sleep(1)
threads = [threading.Thread(target=trickle, daemon=True) for _ in range({trickle})]
for t in threads: t.start()
time.sleep({seconds})
"""
