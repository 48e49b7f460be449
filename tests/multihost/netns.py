"""Hosts on a private network, made on this machine: each a network namespace with its own
address on a bridge this module creates, and a data directory of its own. Needs root (or
CAP_NET_ADMIN and CAP_SYS_ADMIN); everything made is removed by ``Network.remove``.
"""

from __future__ import annotations

import contextlib
import os
import random
import re
import shutil
import signal
import subprocess
import tempfile
import uuid
from dataclasses import dataclass, field
from pathlib import Path


def can_make_namespaces() -> str | None:
    """Why this machine cannot run the hosts, or None when it can."""
    if os.geteuid() != 0:
        return "network namespaces need root"
    if shutil.which("ip") is None:
        return "iproute2 (`ip`) is not installed"
    return None


def ip(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    done = subprocess.run(["ip", *args], capture_output=True, text=True)
    if check and done.returncode != 0:
        raise RuntimeError(f"ip {' '.join(args)}: {done.stderr.strip()}")
    return done


def free_subnet() -> str:
    """A /24 of 10.0.0.0/8 that no interface of this machine is on yet: "10.a.b"."""
    taken = ip("-o", "-4", "addr").stdout + ip("-4", "route").stdout
    for _ in range(200):
        net = f"10.{random.randint(64, 250)}.{random.randint(1, 254)}"
        if f"{net}." not in taken:
            return net
    raise RuntimeError("no free 10.x.y.0/24 subnet on this machine")


@dataclass
class Host:
    name: str  # as the test names it: "db", "worker-1"
    netns: str  # the namespace's name, unique to this run
    address: str
    root: Path  # its data directory: nothing else on this "host" is written by it
    cable: str  # its veth's end on the bridge, in this machine's namespace
    processes: list[subprocess.Popen] = field(default_factory=list)

    def start(
        self, label: str, command: list[str], env: dict[str, str], cwd: Path | None = None
    ) -> subprocess.Popen:
        """``command`` run on this host, its output in ``<root>/<label>.log``."""
        log_path = self.root / f"{label}.log"
        with log_path.open("ab") as log:
            process = subprocess.Popen(
                self._on_host(command),
                env=env,
                cwd=cwd or self.root,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        process.log_path = log_path  # type: ignore[attr-defined]
        self.processes.append(process)
        return process

    def run(self, command: list[str], env: dict[str, str] | None = None) -> str:
        """A command run to its end on this host; its output, or an error that quotes it."""
        done = subprocess.run(
            self._on_host(command),
            env=env,
            cwd=self.root,
            capture_output=True,
            text=True,
        )
        if done.returncode != 0:
            raise RuntimeError(f"{self.name}: {command} failed:\n{done.stdout}{done.stderr}")
        return done.stdout

    def _on_host(self, command: list[str]) -> list[str]:
        """``command`` in this host's network namespace, under its own host name (a UTS
        namespace of its own): Celery names its nodes after the host."""
        rename = 'hostname "$0" && exec "$@"'
        return [
            "ip", "netns", "exec", self.netns,
            "unshare", "--uts", "--", "sh", "-c", rename, self.name, *command,
        ]  # fmt: skip

    def pids(self) -> list[int]:
        """Every process in this host's namespace, whoever started it."""
        listed = ip("netns", "pids", self.netns, check=False).stdout.split()
        return [int(pid) for pid in listed]

    def power_off(self) -> None:
        """Every process of the host killed at once (SIGKILL), as when a machine loses power."""
        # Again until none is left: one may have forked between the listing and the kill.
        for _ in range(50):
            pids = self.pids()
            if not pids:
                break
            for pid in pids:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
        for process in self.processes:
            process.wait()

    def unplug(self) -> None:
        """The host's network cable pulled: it reaches nothing and nothing reaches it."""
        ip("-n", self.netns, "link", "set", "eth0", "down")

    def plug_in(self) -> None:
        ip("-n", self.netns, "link", "set", "eth0", "up")


def remove_leftovers() -> list[str]:
    """Removes what a run killed before its clean-up left behind (its namespaces, their
    processes, its bridge and cables): a run's folder exists from before its first namespace
    until after its last, so namespaces without one are nobody's. Returns the runs' tags."""
    listed = ip("netns", "list").stdout.split("\n")
    namespaces = [line.split()[0] for line in listed if re.match(r"ph[0-9a-f]{6}-", line)]
    tags = sorted({name[:8] for name in namespaces})
    gone = [tag for tag in tags if not list(Path(tempfile.gettempdir()).glob(f"profiler-{tag}-*"))]
    for tag in gone:
        for name in (n for n in namespaces if n.startswith(f"{tag}-")):
            for pid in ip("netns", "pids", name, check=False).stdout.split():
                with contextlib.suppress(ProcessLookupError):
                    os.kill(int(pid), signal.SIGKILL)
            ip("netns", "del", name, check=False)
        links = ip("-o", "link").stdout
        for link in sorted(set(re.findall(rf"\d+: ({tag}(?:v\d+|br))[@:]", links))):
            ip("link", "del", link, check=False)
    return gone


class Network:
    """A bridge and the hosts on it; this machine is on the bridge too (the first address), as
    a user's machine on the same network would be."""

    def __init__(self) -> None:
        self.tag = "ph" + uuid.uuid4().hex[:6]  # unique per run: names never clash
        self.subnet = free_subnet()
        self.bridge = f"{self.tag}br"
        self.address = f"{self.subnet}.1"
        self.root = Path(tempfile.mkdtemp(prefix=f"profiler-{self.tag}-"))
        # Servers that drop root (PostgreSQL) must reach their data directory below this.
        self.root.chmod(0o711)
        self.hosts: dict[str, Host] = {}
        self._made_bridge = False

    def make_bridge(self) -> None:
        ip("link", "add", self.bridge, "type", "bridge")
        self._made_bridge = True
        ip("addr", "add", f"{self.address}/24", "dev", self.bridge)
        ip("link", "set", self.bridge, "up")

    def add_host(self, name: str) -> Host:
        if not self._made_bridge:
            self.make_bridge()
        number = len(self.hosts) + 2
        netns = f"{self.tag}-{name}"
        root = self.root / name
        root.mkdir()
        root.chmod(0o711)  # explicitly: the umask of a test process is 077
        host = Host(name, netns, f"{self.subnet}.{number}", root, cable=f"{self.tag}v{number}")
        ip("netns", "add", netns)
        self.hosts[name] = host
        ip("link", "add", host.cable, "type", "veth", "peer", "name", "eth0", "netns", netns)
        ip("link", "set", host.cable, "master", self.bridge)
        ip("link", "set", host.cable, "up")
        ip("-n", netns, "addr", "add", f"{host.address}/24", "dev", "eth0")
        ip("-n", netns, "link", "set", "eth0", "up")
        ip("-n", netns, "link", "set", "lo", "up")
        return host

    def remove(self, keep_files: bool = False) -> None:
        """Kills every process on every host, removes the namespaces (their veths go with
        them) and the bridge, and the hosts' files unless asked to keep them."""
        for host in self.hosts.values():
            host.power_off()
            # The pair goes now: a namespace outlives its last process while the sockets
            # that process left still try to close (for minutes, towards an unplugged host).
            ip("link", "del", host.cable, check=False)
            ip("netns", "del", host.netns, check=False)
        if self._made_bridge:
            ip("link", "del", self.bridge, check=False)
        if not keep_files:
            shutil.rmtree(self.root, ignore_errors=True)
