"""Network audit for `make container-test`: report every non-loopback network call Python makes.

scripts/container-test.sh mounts this folder into a test container and puts it on PYTHONPATH, so
Python imports it at start-up (site.py imports `sitecustomize`). An audit hook (PEP 578) then sees
every socket connect/sendto and every name lookup, wherever it comes from (Streamlit, requests,
urllib, the app), and writes one `NETAUDIT outbound ...` line to stderr for each that leaves the
loopback interface. The image itself is unchanged: the test only adds this folder at run time.
"""

import ipaddress
import os
import socket
import sys

_LOCAL_NAMES = {None, "", "localhost", "0.0.0.0", "::"}  # wildcards are binds, not destinations


def _is_local_host(host) -> bool:
    if isinstance(host, bytes):
        host = host.decode(errors="replace")
    if host in _LOCAL_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.split("%")[0]).is_loopback
    except ValueError:
        return False  # a DNS name other than localhost: that lookup would leave the machine


def _is_local_address(sock, address) -> bool:
    if getattr(sock, "family", None) == socket.AF_UNIX or isinstance(address, (str, bytes)):
        return True  # a Unix socket (or an abstract one) never leaves the container
    if isinstance(address, tuple) and address:
        return _is_local_host(address[0])
    return False


def _hook(event, args):
    if event in ("socket.connect", "socket.sendto", "socket.sendmsg"):
        sock, address = args[0], args[1]
        if not _is_local_address(sock, address):
            _report(event, address)
    elif event in ("socket.getaddrinfo", "socket.gethostbyname", "socket.gethostbyname_ex",
                   "socket.gethostbyaddr"):
        if not _is_local_host(args[0]):
            _report(event, args[0])


def _report(event, target):
    sys.stderr.write(f"NETAUDIT outbound pid={os.getpid()} {event} {target!r}\n")
    sys.stderr.flush()


sys.addaudithook(_hook)
sys.stderr.write(f"NETAUDIT active pid={os.getpid()}\n")
