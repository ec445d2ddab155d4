#!/usr/bin/env python3
"""iotoll net crr / net cc against the C reference (bench/crr_ref.c). See
crr-vs-ref.sh.

netperf is not packaged for this machine's distribution, so the peer is a
small reference with netperf TCP_CRR's loop: one process per concurrent
client, each with plain blocking sockets doing socket, connect, write the
request, read the response, close; a threaded server that accepts, reads,
answers and waits for the client's close. Both run on loopback, each
against its own server, alternating in every round.

Figures: connections (transactions) per second in the window, and CPU per
connection: the whole host's busy CPU over the client's whole run (ramp-up
included, the same for both; on loopback both ends are this host, so it
covers client and server) over the connections completed in that run
(window rate x (ramp + time), as neither tool counts the ramp-up's).
"""
import argparse
import json
import signal
import subprocess
import sys

import time

from benchlib import host_busy_s, free_port, machine_line, report, rotation, stop

servers = []


def start(cmd, port):
    """Starts a server and waits until its port listens."""
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    servers.append(p)
    for _ in range(100):
        if p.poll() is not None:
            sys.exit(f"server did not start: {' '.join(cmd)}")
        if subprocess.run(["ss", "-ltnH", f"sport = :{port}"], stdout=subprocess.PIPE, text=True).stdout.strip():
            return p
        time.sleep(0.1)
    sys.exit(f"server not listening on {port}: {' '.join(cmd)}")


def timed(cmd):
    b0 = host_busy_s()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    busy = host_busy_s() - b0
    if p.returncode != 0:
        sys.exit(f"failed ({p.returncode}): {' '.join(cmd)}\n{p.stderr[-2000:]}")
    return p.stdout, busy


def one(tool, a, kind, ports):
    req, resp = (a.req, a.resp) if kind == "crr" else (0, 0)
    if tool == "iotoll":
        cmd = [a.iotoll, "net", kind, f"127.0.0.1:{ports['iotoll']}", "--conns", str(a.conns),
               "--ramp", f"{a.ramp}s", "--time", f"{a.time}s", "--json", "--quiet", "--no-db"]
        if kind == "crr":
            cmd += ["--req", str(req), "--resp", str(resp)]
        if a.linger0:
            cmd += ["--linger0"]
        out, busy = timed(cmd)
        d = json.loads(out)
        rate, failures = d["metrics"]["conn_s"], d["metrics"]["failures"]
    else:
        cmd = [a.ref, "client", "127.0.0.1", str(ports["ref"]), str(a.conns), str(req), str(resp),
               str(a.ramp), str(a.time)] + (["linger0"] if a.linger0 else [])
        out, busy = timed(cmd)
        w = out.split()
        rate, failures = float(w[w.index("trans_s") + 1]), float(w[w.index("failures") + 1])
    conns = rate * (a.ramp + a.time)
    return {"conn_s": rate, "cpu_us_per_conn": busy * 1e6 / conns if conns else float("nan"),
            "failures": failures}


def run_kind(a, kind):
    ports = {"iotoll": free_port(), "ref": free_port()}
    req, resp = (a.req, a.resp) if kind == "crr" else (0, 0)
    try:
        start([a.iotoll, "net", "serve", "--listen", f"127.0.0.1:{ports['iotoll']}"], ports["iotoll"])
        start([a.ref, "server", str(ports["ref"]), str(a.conns), str(req), str(resp)], ports["ref"])
        res = {"iotoll": [], "ref": []}
        for r in range(a.rounds):
            for tool in rotation(["iotoll", "ref"], r):
                x = one(tool, a, kind, ports)
                res[tool].append(x)
                print(f"  {kind} round {r + 1} {tool:<7} {x['conn_s']:10.0f} conn/s  "
                      f"{x['cpu_us_per_conn']:7.1f} CPU us/conn  {x['failures']:.0f} failed", file=sys.stderr)
    finally:
        while servers:
            stop(servers.pop())
    what = f"request {req} B, response {resp} B" if kind == "crr" else "connect/close"
    what += ", SO_LINGER 0" if a.linger0 else ", FIN (TIME_WAIT at the client)"
    report(f"{kind} on loopback, {a.conns} clients, {what} (medians of {a.rounds})", res,
           [("conn_s", "conn/s"), ("cpu_us_per_conn", "CPU us/conn"), ("failures", "failures")])
    print()


def on_signal(signum, _frame):
    sys.exit(128 + signum)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iotoll", required=True)
    ap.add_argument("--ref", required=True, help="the built crr_ref binary")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--time", type=int, default=5)
    ap.add_argument("--ramp", type=int, default=1)
    ap.add_argument("--conns", type=int, default=4)
    ap.add_argument("--req", type=int, default=1)
    ap.add_argument("--resp", type=int, default=1)
    ap.add_argument("--kinds", default="crr,cc")
    ap.add_argument("--linger0", action="store_true",
                    help="both close with a reset (SO_LINGER 0): no TIME_WAIT, so the port range does not bound the rate")
    a = ap.parse_args()
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGHUP, on_signal)
    kinds = a.kinds.split(",")
    if any(k not in ("crr", "cc") for k in kinds):
        sys.exit(f"unknown kind in {a.kinds}: use crr, cc")
    print(machine_line())
    print(f"{a.rounds} rounds x ({a.ramp} s ramp + {a.time} s), alternating iotoll / C reference (bench/crr_ref.c)\n")
    try:
        for k in kinds:
            run_kind(a, k)
    finally:
        while servers:
            stop(servers.pop())


if __name__ == "__main__":
    main()
