"""Write the E1 embedded corpus (envs/sv_env_network_logs/data/embedded_flows.csv), deterministically.

The corpus is a few hundred flows in the IoT-23 conn.log.labeled columns (Zeek conn fields plus
tunnel_parents, label, detailed-label), so the IoT-23 loader reads it. Every scenario is scripted from a fixed
seed, and the hard cases are deliberate: benign monitoring that fails like a scan, benign periodic check-ins,
benign bulk uploads, infected hosts that also resolve names and sync clocks, slow HTTPS beacons, HTTPS
exfiltration and HTTP floods that look like ordinary sessions. Addresses are private (RFC 1918) or
documentation (RFC 5737) ranges: data only.

Unlike the other corpora, E1 has no hand-written source data: the scenario scripts below are its source. Each
draws from one seeded random stream in a fixed order, so the order of the draws, not a table, fixes the bytes.

    python scripts/build_e1_embedded.py           # rewrite the file
    python scripts/build_e1_embedded.py --check   # exit 1 if the file differs from what this script writes
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from sv_shared.data.embedded import build_main

SEED = 20190101
START_TS = 1_546_329_600.0  # 2019-01-01 08:00:00 UTC
WINDOW_S = 4 * 3600.0
OUTPUT = Path(__file__).resolve().parents[1] / "envs" / "sv_env_network_logs" / "data" / "embedded_flows.csv"

COLUMNS = (
    "ts",
    "uid",
    "id.orig_h",
    "id.orig_p",
    "id.resp_h",
    "id.resp_p",
    "proto",
    "service",
    "duration",
    "orig_bytes",
    "resp_bytes",
    "conn_state",
    "local_orig",
    "local_resp",
    "missed_bytes",
    "history",
    "orig_pkts",
    "orig_ip_bytes",
    "resp_pkts",
    "resp_ip_bytes",
    "tunnel_parents",
    "label",
    "detailed-label",
)
HEADER_BYTES = {"tcp": 40, "udp": 28, "icmp": 28}
MSS = 1448
UID_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

# Hosts. Internal: RFC 1918; "internet": RFC 5737 documentation ranges.
LAN_DNS = "192.168.1.1"
CORP_DNS = "10.0.0.2"
INFECTED_IOT = "192.168.1.37"  # a compromised camera: scans, floods, beacons, and still does its normal chores
INFECTED_DVR = "192.168.1.52"  # more of the same botnet: each plays some of its attacks its own way
INFECTED_ROUTER = "192.168.1.61"
INFECTED_NAS = "192.168.1.74"
COMPROMISED_WS = "10.0.1.33"  # a compromised workstation: HTTPS C&C and exfiltration
COMPROMISED_LAPTOP = "10.0.2.17"  # a second one: a faster HTTPS beacon, DNS tunnelling
COMPROMISED_DEV = "10.0.1.45"  # raw TCP exfiltration
COMPROMISED_KIOSK = "10.0.2.29"  # cloud uploads
MONITOR = "10.0.9.5"
SSH_SERVER = "10.0.5.22"
FTP_SERVER = "10.0.5.21"
SCANNED_SERVER = "10.0.5.30"
EXTERNAL_ATTACKER = "198.51.100.66"
FTP_ATTACKER = "203.0.113.150"
SSH_GUESSER = "198.51.100.91"
SLOW_SCANNER = "203.0.113.171"
SSH_SERVER_2 = "10.0.5.23"
HTTPS_C2_2 = "192.0.2.41"
EXFIL_DROP_2 = "192.0.2.150"
IRC_C2 = "203.0.113.200"
HTTPS_C2 = "203.0.113.201"
HTTP_C2 = "192.0.2.80"
EXFIL_DROP = "198.51.100.201"
EXFIL_RAW = "198.51.100.202"
FLOOD_TARGET = "198.51.100.20"
HTTP_FLOOD_TARGET = "203.0.113.30"
MALWARE_HOST = "203.0.113.9"
BACKUP_SERVICE = "198.51.100.50"
NTP_SERVER = "198.51.100.123"
UPDATE_SERVER = "203.0.113.77"


@dataclass(frozen=True)
class Flow:
    """One Zeek conn record; None means Zeek's unset marker "-"."""

    ts: float
    src: str
    sport: int
    dst: str
    dport: int
    proto: str
    service: str | None
    duration: float | None
    orig_bytes: int | None
    resp_bytes: int | None
    state: str
    history: str | None
    orig_pkts: int
    resp_pkts: int
    label: str
    detail: str | None

    def cells(self, uid: str) -> list[str]:
        header = HEADER_BYTES[self.proto]
        orig_ip = (self.orig_bytes or 0) + header * self.orig_pkts
        resp_ip = (self.resp_bytes or 0) + header * self.resp_pkts
        values = [
            f"{self.ts:.6f}",
            uid,
            self.src,
            str(self.sport),
            self.dst,
            str(self.dport),
            self.proto,
            self.service,
            None if self.duration is None else f"{self.duration:.6f}",
            self.orig_bytes,
            self.resp_bytes,
            self.state,
            None,
            None,
            0,
            self.history,
            self.orig_pkts,
            orig_ip,
            self.resp_pkts,
            resp_ip,
            None,
            self.label,
            self.detail,
        ]
        return ["-" if value is None else str(value) for value in values]


class Builder:
    """Scenario scripts sharing one random stream, so the whole file follows from SEED."""

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        self.flows: list[Flow] = []

    # --- primitives ---

    def when(self, start: float = 0.0, end: float = WINDOW_S) -> float:
        return START_TS + float(self.rng.uniform(start, end))

    def eph(self) -> int:
        return int(self.rng.integers(32768, 61000))

    def int_between(self, low: int, high: int) -> int:
        return int(self.rng.integers(low, high + 1))

    def lognormal(self, median: float, sigma: float, low: float, high: float) -> float:
        return float(np.clip(self.rng.lognormal(math.log(median), sigma), low, high))

    def session(
        self,
        ts: float,
        src: str,
        dst: str,
        dport: int,
        *,
        service: str | None,
        duration: float,
        orig_bytes: int,
        resp_bytes: int,
        label: str = "Benign",
        detail: str | None = None,
        state: str = "SF",
        history: str | None = None,
        sport: int | None = None,
    ) -> None:
        """A TCP connection that completed its handshake and carried data."""
        orig_pkts = 3 + math.ceil(orig_bytes / MSS) + self.int_between(0, 2)
        resp_pkts = 2 + math.ceil(resp_bytes / MSS) + self.int_between(0, 2)
        if history is None:
            history = {
                "SF": "ShADadFf",
                "RSTO": "ShADadR",
                "RSTR": "ShADadr",
                "S1": "ShADad",
                "S3": "ShADadF",
            }[state]
        self.flows.append(
            Flow(
                ts,
                src,
                self.eph() if sport is None else sport,
                dst,
                dport,
                "tcp",
                service,
                duration,
                orig_bytes,
                resp_bytes,
                state,
                history,
                orig_pkts,
                resp_pkts,
                label,
                detail,
            )
        )

    def syn(
        self,
        ts: float,
        src: str,
        dst: str,
        dport: int,
        *,
        label: str,
        detail: str | None,
        tries: int = 1,
        sport: int | None = None,
    ) -> None:
        """An unanswered SYN (S0): one leaves duration and bytes unset; retries add the 1 s/2 s backoff."""
        duration = None if tries == 1 else {2: 1.0, 3: 3.0}[tries] + float(self.rng.uniform(0.0, 0.02))
        payload = None if tries == 1 else 0
        self.flows.append(
            Flow(
                ts,
                src,
                self.eph() if sport is None else sport,
                dst,
                dport,
                "tcp",
                None,
                duration,
                payload,
                payload,
                "S0",
                "S",
                tries,
                0,
                label,
                detail,
            )
        )

    def rejected(self, ts: float, src: str, dst: str, dport: int, *, label: str, detail: str | None) -> None:
        """A SYN answered by RST (REJ): a closed port."""
        duration = float(self.rng.uniform(0.0001, 0.003))
        self.flows.append(
            Flow(ts, src, self.eph(), dst, dport, "tcp", None, duration, 0, 0, "REJ", "Sr", 1, 1, label, detail)
        )

    def datagram(
        self,
        ts: float,
        src: str,
        sport: int,
        dst: str,
        dport: int,
        *,
        service: str | None,
        orig_bytes: int,
        resp_bytes: int | None,
        label: str = "Benign",
        detail: str | None = None,
        orig_pkts: int = 1,
        duration: float | None = None,
    ) -> None:
        """A UDP exchange: answered (SF, Dd) or not (S0, D)."""
        if resp_bytes is None:
            state, history, resp_pkts = "S0", "D", 0
            if orig_pkts == 1:
                duration = None
        else:
            state, history, resp_pkts = "SF", "Dd", max(1, orig_pkts)
        if duration is None and resp_bytes is not None:
            duration = float(self.rng.uniform(0.0005, 0.08))
        self.flows.append(
            Flow(
                ts,
                src,
                sport,
                dst,
                dport,
                "udp",
                service,
                duration,
                orig_bytes if duration is not None else None,
                (resp_bytes or 0) if duration is not None else None,
                state,
                history,
                orig_pkts,
                resp_pkts,
                label,
                detail,
            )
        )

    # --- benign ---

    def benign(self) -> None:
        clients = [f"10.0.1.{host}" for host in range(10, 41)] + [f"192.168.1.{host}" for host in range(20, 31)]
        for _ in range(55):  # web browsing over HTTPS, a few ended by resets
            state = str(self.rng.choice(["SF"] * 9 + ["RSTO", "RSTR"]))
            self.session(
                self.when(),
                str(self.rng.choice(clients)),
                f"203.0.113.{self.int_between(10, 60)}",
                443,
                service="ssl",
                duration=self.lognormal(4.0, 1.3, 0.05, 600.0),
                state=state,
                orig_bytes=int(self.lognormal(1400, 0.7, 300, 40_000)),
                resp_bytes=int(self.lognormal(45_000, 1.6, 1_500, 3_000_000)),
            )
        for _ in range(12):  # plain HTTP
            self.session(
                self.when(),
                str(self.rng.choice(clients)),
                f"198.51.100.{self.int_between(70, 99)}",
                80,
                service="http",
                duration=self.lognormal(0.6, 1.0, 0.01, 30.0),
                orig_bytes=int(self.lognormal(420, 0.4, 150, 2_000)),
                resp_bytes=int(self.lognormal(12_000, 1.4, 200, 900_000)),
            )
        for index in range(32):  # DNS, three of them timing out
            client = str(self.rng.choice([*clients, INFECTED_IOT]))
            resolver = LAN_DNS if client.startswith("192.168.") else CORP_DNS
            answered = index % 11 != 10
            self.datagram(
                self.when(),
                client,
                self.eph(),
                resolver,
                53,
                service="dns" if answered else None,
                orig_bytes=self.int_between(28, 48),
                resp_bytes=self.int_between(60, 320) if answered else None,
            )
        for device, phase in ((INFECTED_IOT, 90.0), ("192.168.1.25", 400.0), ("192.168.1.26", 700.0)):
            for poll in range(4):  # NTP every 1024 s: as periodic as any beacon
                self.datagram(
                    START_TS + phase + poll * 1024.0 + float(self.rng.uniform(0, 0.5)),
                    device,
                    123,
                    NTP_SERVER,
                    123,
                    service=None,
                    orig_bytes=48,
                    resp_bytes=48,
                )
        for _ in range(10):  # administrators' SSH sessions to the server the brute force also targets
            self.session(
                self.when(),
                f"10.0.1.{self.int_between(5, 8)}",
                SSH_SERVER,
                22,
                service="ssh",
                duration=self.lognormal(400.0, 1.0, 20.0, 3_600.0),
                orig_bytes=int(self.lognormal(15_000, 1.0, 3_000, 400_000)),
                resp_bytes=int(self.lognormal(60_000, 1.2, 4_000, 2_000_000)),
            )
        for _ in range(8):  # nightly-style backups: large one-way uploads
            size = int(self.lognormal(60_000_000, 1.0, 8_000_000, 450_000_000))
            self.session(
                self.when(),
                f"10.0.1.{self.int_between(10, 20)}",
                BACKUP_SERVICE,
                443,
                service="ssl",
                duration=size / self.lognormal(4_000_000, 0.4, 1_000_000, 12_000_000),
                orig_bytes=size,
                resp_bytes=self.int_between(6_000, 60_000),
            )
        checks = [(f"10.0.5.{host}", port) for host in (21, 22, 30, 41) for port in (22, 80, 443, 5432, 9100)]
        picks = self.rng.choice(len(checks), size=20, replace=False)
        for order, pick in enumerate(sorted(int(value) for value in picks)):  # monitoring sweeps, some targets down
            host, port = checks[pick]
            ts = START_TS + 300.0 * order + float(self.rng.uniform(0, 2))
            if order % 5 == 3:
                self.rejected(ts, MONITOR, host, port, label="Benign", detail=None)
            elif order % 5 == 4:
                self.syn(ts, MONITOR, host, port, label="Benign", detail=None, tries=int(self.rng.choice([1, 3])))
            else:
                self.session(
                    ts,
                    MONITOR,
                    host,
                    port,
                    service=None,
                    duration=float(self.rng.uniform(0.002, 0.05)),
                    orig_bytes=self.int_between(0, 90),
                    resp_bytes=self.int_between(40, 600),
                    state="RSTO" if port == 9100 else "SF",
                )
        for poll in range(10):  # a hub's update check-in every ~5 minutes
            self.session(
                START_TS + 1_800.0 + poll * 300.0 + float(self.rng.normal(0, 4)),
                "192.168.1.25",
                UPDATE_SERVER,
                443,
                service="ssl",
                duration=float(self.rng.uniform(0.3, 0.9)),
                orig_bytes=self.int_between(600, 760),
                resp_bytes=self.int_between(3_900, 4_400),
            )
        for _ in range(6):  # ping
            ts = self.when()
            self.flows.append(
                Flow(
                    ts,
                    MONITOR,
                    8,
                    f"10.0.5.{self.int_between(21, 41)}",
                    0,
                    "icmp",
                    None,
                    float(self.rng.uniform(0.0002, 0.002)),
                    56,
                    56,
                    "OTH",
                    None,
                    1,
                    1,
                    "Benign",
                    None,
                )
            )

    # --- malicious ---
    # Every kind of attack is played by several hosts, each its own way: a split holds out whole hosts (templates), so
    # training, dev and test each see every kind, never the same host's run.

    def port_scans(self) -> None:
        for device, start, ports in ((INFECTED_IOT, 5_400.0, [23, 23, 23, 2323]), (INFECTED_DVR, 3_100.0, [23, 5555])):
            ts = START_TS + start
            for _ in range(8):  # Mirai-style horizontal telnet/adb scan from an infected device
                ts += float(self.rng.exponential(0.4))
                target = f"{self.rng.choice(['192.168.1', '198.51.100', '203.0.113'])}.{self.int_between(2, 254)}"
                self.syn(
                    ts,
                    device,
                    target,
                    int(self.rng.choice(ports)),
                    label="Malicious",
                    detail="PartOfAHorizontalPortScan",
                    tries=int(self.rng.choice([1, 1, 3])),
                )
        ts = START_TS + 9_000.0
        ports = [21, 22, 25, 80, 110, 135, 139, 443, 445, 1433, 3389, 8080]
        open_ports = {22, 80, 443}
        for port in self.rng.permutation(ports).tolist():  # an outside SYN scan of one server's ports
            ts += float(self.rng.uniform(0.001, 0.05))
            if port in open_ports:
                self.flows.append(
                    Flow(
                        ts,
                        EXTERNAL_ATTACKER,
                        47_812,
                        SCANNED_SERVER,
                        port,
                        "tcp",
                        None,
                        float(self.rng.uniform(0.0002, 0.001)),
                        0,
                        0,
                        "RSTO",
                        "ShR",
                        2,
                        1,
                        "Malicious",
                        "PortScan",
                    )
                )
            else:
                self.rejected(ts, EXTERNAL_ATTACKER, SCANNED_SERVER, port, label="Malicious", detail="PortScan")
        for probe in range(4):  # a slow scan from elsewhere: one probe every ~20 minutes
            self.syn(
                START_TS + 2_000.0 + probe * 1_200.0 + float(self.rng.uniform(0, 60)),
                SLOW_SCANNER,
                f"10.0.5.{40 + probe}",
                8080,
                label="Malicious",
                detail="PortScan",
                tries=3,
            )

    def brute_force(self) -> None:
        for attacker, server, start, attempts in (
            (EXTERNAL_ATTACKER, SSH_SERVER, 7_200.0, 8),
            (SSH_GUESSER, SSH_SERVER_2, 4_100.0, 7),
        ):
            ts = START_TS + start
            for attempt in range(
                attempts
            ):  # SSH password guessing: short sessions, similar sizes, closed by the server
                ts += float(self.rng.uniform(2.0, 5.0))
                self.session(
                    ts,
                    attacker,
                    server,
                    22,
                    service="ssh",
                    duration=float(self.rng.uniform(1.6, 4.2)),
                    orig_bytes=self.int_between(1_250, 1_700),
                    resp_bytes=self.int_between(2_050, 2_600),
                    label="Malicious",
                    detail="BruteForce",
                    state="RSTR" if attempt % 4 == 3 else "SF",
                )
        ts = START_TS + 11_000.0
        for _ in range(6):  # FTP login guessing
            ts += float(self.rng.uniform(0.5, 2.0))
            self.session(
                ts,
                FTP_ATTACKER,
                FTP_SERVER,
                21,
                service="ftp",
                duration=float(self.rng.uniform(0.2, 1.1)),
                orig_bytes=self.int_between(28, 60),
                resp_bytes=self.int_between(180, 260),
                label="Malicious",
                detail="BruteForce",
            )
        for _ in range(3):  # telnet credential stuffing from the camera
            self.session(
                self.when(6_000, 6_300),
                INFECTED_IOT,
                f"192.168.1.{self.int_between(40, 60)}",
                23,
                service=None,
                duration=float(self.rng.uniform(3.0, 9.0)),
                orig_bytes=self.int_between(40, 90),
                resp_bytes=self.int_between(70, 160),
                label="Malicious",
                detail="BruteForce",
            )

    def beacons(self) -> None:
        for beat in range(8):  # IRC heartbeat every ~60 s
            self.session(
                START_TS + 600.0 + beat * 60.0 + float(self.rng.normal(0, 2)),
                INFECTED_IOT,
                IRC_C2,
                6667,
                service="irc",
                duration=float(self.rng.uniform(0.1, 0.4)),
                orig_bytes=self.int_between(20, 60),
                resp_bytes=self.int_between(30, 90),
                label="Malicious",
                detail="C&C-HeartBeat",
                state="S1",
            )
        for host, c2, period, jitter, beats in (
            (COMPROMISED_WS, HTTPS_C2, 900.0, 45.0, 6),
            (COMPROMISED_LAPTOP, HTTPS_C2_2, 300.0, 20.0, 6),
        ):
            for beat in range(beats):  # slow HTTPS beacon, sized like ordinary browsing
                self.session(
                    START_TS + 300.0 + beat * period + float(self.rng.normal(0, jitter)),
                    host,
                    c2,
                    443,
                    service="ssl",
                    duration=float(self.rng.uniform(0.4, 1.5)),
                    orig_bytes=self.int_between(700, 1_100),
                    resp_bytes=self.int_between(1_200, 3_400),
                    label="Malicious",
                    detail="C&C",
                )
        for beat in range(5):  # HTTP polling for commands on a high port
            self.session(
                START_TS + 8_000.0 + beat * 120.0 + float(self.rng.normal(0, 5)),
                INFECTED_DVR,
                HTTP_C2,
                8080,
                service="http",
                duration=float(self.rng.uniform(0.05, 0.3)),
                orig_bytes=self.int_between(150, 260),
                resp_bytes=self.int_between(0, 120),
                label="Malicious",
                detail="C&C",
            )

    def exfiltration(self) -> None:
        for host, drop, uploads in ((COMPROMISED_WS, EXFIL_DROP, 4), (COMPROMISED_KIOSK, EXFIL_DROP_2, 3)):
            for _ in range(uploads):  # uploads to cloud storage, like the backups
                size = int(self.lognormal(25_000_000, 0.9, 4_000_000, 120_000_000))
                self.session(
                    self.when(10_800, WINDOW_S),
                    host,
                    drop,
                    443,
                    service="ssl",
                    duration=size / self.lognormal(2_500_000, 0.4, 500_000, 8_000_000),
                    orig_bytes=size,
                    resp_bytes=self.int_between(4_000, 30_000),
                    label="Malicious",
                    detail="Exfiltration",
                )
        ts = START_TS + 12_600.0
        for _ in range(7):  # DNS tunnelling: long encoded names through the corporate resolver
            ts += float(self.rng.uniform(0.2, 3.0))
            self.datagram(
                ts,
                COMPROMISED_LAPTOP,
                self.eph(),
                CORP_DNS,
                53,
                service="dns",
                orig_bytes=self.int_between(180, 250),
                resp_bytes=self.int_between(90, 200),
                label="Malicious",
                detail="Exfiltration",
            )
        for _ in range(3):  # raw TCP to an unusual port
            size = self.int_between(2_000_000, 15_000_000)
            self.session(
                self.when(12_000, WINDOW_S),
                COMPROMISED_DEV,
                EXFIL_RAW,
                8443,
                service=None,
                duration=float(self.rng.uniform(5.0, 40.0)),
                orig_bytes=size,
                resp_bytes=self.int_between(0, 400),
                label="Malicious",
                detail="Exfiltration",
            )

    def ddos(self) -> None:
        ts = START_TS + 10_000.0
        for _ in range(8):  # UDP flood fragments: unanswered datagrams of near-MTU size
            ts += float(self.rng.exponential(0.01))
            packets = int(self.rng.choice([1, 1, 2]))
            self.datagram(
                ts,
                INFECTED_IOT,
                self.eph(),
                FLOOD_TARGET,
                int(self.rng.choice([80, 53, 1900])),
                service=None,
                orig_bytes=packets * self.int_between(512, 1_400),
                resp_bytes=None,
                orig_pkts=packets,
                label="Malicious",
                detail="DDoS",
                duration=float(self.rng.uniform(0.000002, 0.00002)) if packets > 1 else None,
            )
        for _ in range(8):  # SYN flood
            ts += float(self.rng.exponential(0.01))
            self.syn(ts, INFECTED_DVR, FLOOD_TARGET, 80, label="Malicious", detail="DDoS")
        for _ in range(5):  # HTTP GET flood: each request looks like a normal page load
            ts += float(self.rng.exponential(0.05))
            self.session(
                ts,
                INFECTED_ROUTER,
                HTTP_FLOOD_TARGET,
                80,
                service="http",
                duration=float(self.rng.uniform(0.02, 0.2)),
                orig_bytes=self.int_between(90, 180),
                resp_bytes=self.int_between(500, 9_000),
                label="Malicious",
                detail="DDoS",
            )
        for _ in range(3):  # long-lived flood flows
            packets = self.int_between(40_000, 60_000)
            self.flows.append(
                Flow(
                    self.when(10_000, 10_100),
                    INFECTED_NAS,
                    self.eph(),
                    FLOOD_TARGET,
                    80,
                    "udp",
                    None,
                    float(self.rng.uniform(20.0, 40.0)),
                    packets * 1_024,
                    0,
                    "S0",
                    "D",
                    packets,
                    0,
                    "Malicious",
                    "DDoS",
                )
            )

    def other_attacks(self) -> None:
        for device, downloads in ((INFECTED_IOT, 3), (INFECTED_NAS, 2)):
            for _ in range(downloads):  # an infected device fetching a malware binary over plain HTTP
                self.session(
                    self.when(),
                    device,
                    MALWARE_HOST,
                    80,
                    service="http",
                    duration=float(self.rng.uniform(0.8, 3.0)),
                    orig_bytes=self.int_between(140, 300),
                    resp_bytes=self.int_between(60_000, 200_000),
                    label="Malicious",
                    detail="FileDownload",
                )
        for device, requests in ((INFECTED_ROUTER, 5), (INFECTED_DVR, 3)):
            for _ in range(requests):  # exploit requests against router/camera web services
                self.session(
                    self.when(),
                    device,
                    f"192.168.1.{self.int_between(2, 19)}",
                    int(self.rng.choice([80, 8080, 37215, 52869])),
                    service="http",
                    duration=float(self.rng.uniform(0.01, 0.6)),
                    orig_bytes=self.int_between(300, 620),
                    resp_bytes=self.int_between(0, 200),
                    label="Malicious",
                    detail="Attack",
                    state=str(self.rng.choice(["SF", "RSTO"])),
                )

    def build(self) -> list[Flow]:
        self.benign()
        self.port_scans()
        self.brute_force()
        self.beacons()
        self.exfiltration()
        self.ddos()
        self.other_attacks()
        return sorted(self.flows, key=lambda flow: (flow.ts, flow.src, flow.sport))


def render(seed: int = SEED) -> str:
    """The corpus as CSV text: header, then one row per flow in time order, each with a Zeek-style uid."""
    builder = Builder(seed)
    flows = builder.build()
    lines = [",".join(COLUMNS)]
    for flow in flows:
        uid = "C" + "".join(builder.rng.choice(list(UID_ALPHABET), size=17).tolist())
        lines.append(",".join(flow.cells(uid)))
    return "\n".join(lines) + "\n"


def files() -> dict[Path, str]:
    """The shipped file and its contents."""
    return {OUTPUT: render()}


def main(argv: Sequence[str] | None = None) -> int:
    return build_main(__doc__, files, script="scripts/build_e1_embedded.py", argv=argv)


if __name__ == "__main__":
    raise SystemExit(main())
