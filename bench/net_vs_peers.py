#!/usr/bin/env python3
"""iotoll vs iperf3, iperf2 and sockperf on loopback. See net-vs-peers.sh.

Every server runs for the whole benchmark on 127.0.0.1; clients alternate.
Whole-host CPU is measured the same way for every tool: /proc/stat busy time
over the client's whole run (no ramp-up, so every byte the tool reports falls
inside it). On loopback both ends are this host, so it covers both.
User-space CPU is the client's (wait4) plus the server's (/proc/PID/stat)
utime over the run.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

from benchlib import CLK_TCK, host_busy_s, free_port, machine_line, median, report as report_


def proc_utime_s(pid):
    with open(f"/proc/{pid}/stat") as f:
        s = f.read()
    fields = s[s.rindex(")") + 2:].split()
    return int(fields[11]) / CLK_TCK  # field 14 (utime), counted from field 3


def run(cmd, server_pid, rss=False):
    """Runs a client; returns (stdout, host busy s, user CPU s of client+server,
    the client's peak RSS in KiB when rss is set, else None). The RSS is GNU
    time's %M: wait4's ru_maxrss would include this Python's own RSS (see
    benchlib.max_rss_kib)."""
    tmp = tempfile.NamedTemporaryFile("r", prefix="iotoll-bench-rss-") if rss else None
    if tmp:
        cmd = ["/usr/bin/time", "-f", "%M", "-o", tmp.name] + cmd
    b0, u0 = host_busy_s(), proc_utime_s(server_pid)
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out = p.stdout.read()
    err = p.stderr.read()
    _, status, ru = os.wait4(p.pid, 0)
    b1, u1 = host_busy_s(), proc_utime_s(server_pid)
    if status != 0:
        sys.exit(f"failed ({status}): {' '.join(cmd)}\n{err.decode()[-2000:]}")
    peak = int(tmp.read().split()[-1]) if tmp else None
    return out.decode(), b1 - b0, ru.ru_utime + (u1 - u0), peak


def start(cmd):
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(0.5)
    if p.poll() is not None:
        sys.exit(f"server did not start: {' '.join(cmd)}")
    return p


# Peer rounds that produced no figure, by tool (reported beside the medians).
peer_failed = {}


def report(title, res, keys):
    report_(title, res, keys, failed=peer_failed)
    print()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iotoll", required=True)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--time", type=int, default=5)
    ap.add_argument("--cases", default="iperf3,iperf2,sockperf,memory")
    ap.add_argument("--iperf2-conns", type=int, default=1000,
                    help="connections of the iperf2 case (iperf -P N against --conns N)")
    a = ap.parse_args()
    wanted = a.cases.split(",")
    ex = a.iotoll
    print(machine_line())
    print(f"{a.rounds} rounds x {a.time} s, alternating; loopback\n")

    ports = {k: free_port() for k in ("iotoll", "iperf3", "iperf2", "sockperf")}
    servers = {
        "iotoll": start([ex, "net", "serve", "--listen", f"127.0.0.1:{ports['iotoll']}"]),
        "iperf3": start(["iperf3", "-s", "-p", str(ports["iperf3"])]),
        "iperf2": start(["iperf", "-s", "-p", str(ports["iperf2"])]),
        "sockperf": start(["sockperf", "server", "--tcp", "-i", "127.0.0.1", "-p", str(ports["sockperf"])]),
    }
    io_addr = f"127.0.0.1:{ports['iotoll']}"
    T = a.time
    try:
        if "iperf3" in wanted:
            res = {"iotoll": [], "iperf3": []}
            for r in range(a.rounds):
                for tool in (["iperf3", "iotoll"] if r % 2 == 0 else ["iotoll", "iperf3"]):
                    if tool == "iperf3":
                        out, busy, user, _ = run(["iperf3", "-c", "127.0.0.1", "-p", str(ports["iperf3"]), "-t", str(T),
                                                  "-l", "128K", "-J"], servers["iperf3"].pid)
                        e = json.loads(out)["end"]["sum_received"]
                        mbit, nbytes = e["bits_per_second"] / 1e6, e["bytes"]
                    else:
                        out, busy, user, _ = run([ex, "net", "stream", io_addr, "--msg", "128k", "--ramp", "0s",
                                                  "--time", f"{T}s", "--json", "--quiet", "--no-db"], servers["iotoll"].pid)
                        m = json.loads(out)["metrics"]
                        mbit = m["mbit_s"]
                        nbytes = mbit * 1e6 / 8 * m["window_s"]
                    res[tool].append({"mbit_s": mbit, "cpu_us_per_kb": busy * 1e6 / (nbytes / 1024)})
                    print(f"  iperf3 case round {r + 1} {tool:<7} {mbit:10.0f} Mbit/s", file=sys.stderr)
            report("1 connection, 128 KiB messages, tx (vs iperf3)", res,
                   [("mbit_s", "goodput"), ("cpu_us_per_kb", "CPU us/KB")])

        if "iperf2" in wanted:
            res = {"iotoll": [], "iperf2": []}
            connect = []
            for r in range(a.rounds):
                for tool in (["iperf2", "iotoll"] if r % 2 == 0 else ["iotoll", "iperf2"]):
                    if tool == "iperf2":
                        out, busy, user, _ = run(["iperf", "-c", "127.0.0.1", "-p", str(ports["iperf2"]), "-P", str(a.iperf2_conns),
                                                  "-l", "64K", "-t", str(T), "-f", "m"], servers["iperf2"].pid)
                        sums = re.findall(r"\[SUM\].*?([\d.]+) Mbits/sec", out)
                        if not sums:
                            # iperf2 prints its sum only when every one of
                            # the -P threads reported; on a loaded host
                            # some do not. The peer's round is lost, not
                            # guessed; the benchmark goes on.
                            peer_failed["iperf2"] = peer_failed.get("iperf2", 0) + 1
                            print(f"  iperf2 case round {r + 1} iperf2: no [SUM] line (some of its threads did not report); round left out", file=sys.stderr)
                            continue
                        mbit = float(sums[-1])
                    else:
                        out, busy, user, _ = run([ex, "net", "stream", io_addr, "--conns", str(a.iperf2_conns), "--msg", "64k",
                                                  "--ramp", "0s", "--time", f"{T}s", "--json", "--quiet", "--no-db"], servers["iotoll"].pid)
                        m = json.loads(out)["metrics"]
                        mbit = m["mbit_s"]
                        connect.append(m["connect_s"])
                    res[tool].append({"mbit_s": mbit, "user_cpu_s": user})
                    print(f"  iperf2 case round {r + 1} {tool:<7} {mbit:10.0f} Mbit/s  user {user:.2f} s", file=sys.stderr)
            n = a.iperf2_conns
            report(f"{n:,} connections, 64 KiB messages, tx (vs iperf2 -P {n})", res,
                   [("mbit_s", "goodput"), ("user_cpu_s", "user CPU s")])
            print(f"   iotoll: {n:,} connections established in {median(connect):.3f} s (median; max {max(connect):.3f} s)\n")

        if "sockperf" in wanted:
            for size in (1, 14):
                res = {"iotoll": [], "sockperf": []}
                for r in range(a.rounds):
                    for tool in (["sockperf", "iotoll"] if r % 2 == 0 else ["iotoll", "sockperf"]):
                        if tool == "sockperf":
                            out, busy, user, _ = run(["sockperf", "ping-pong", "--tcp", "-i", "127.0.0.1", "-p",
                                                      str(ports["sockperf"]), "-t", str(T), "-m", "14"], servers["sockperf"].pid)
                            m = re.search(r"\[Valid Duration\] RunTime=([\d.]+) sec; SentMessages=(\d+); ReceivedMessages=(\d+)", out)
                            if not m:
                                sys.exit("no Valid Duration line from sockperf:\n" + out[-2000:])
                            rate = int(m.group(3)) / float(m.group(1))
                        else:
                            out, busy, user, _ = run([ex, "net", "rr", io_addr, "--req", str(size), "--resp", str(size),
                                                      "--ramp", "0s", "--time", f"{T}s", "--json", "--quiet", "--no-db"], servers["iotoll"].pid)
                            rate = json.loads(out)["metrics"]["trans_s"]
                        res[tool].append({"trans_s": rate})
                        print(f"  sockperf case ({size} B) round {r + 1} {tool:<8} {rate:10.0f} trans/s", file=sys.stderr)
                report(f"request/response on 1 connection: iotoll {size} B vs sockperf 14 B (its minimum)", res,
                       [("trans_s", "transactions/s")])

        if "memory" in wanted:
            port = free_port()
            srv = start([ex, "net", "serve", "--listen", f"127.0.0.1:{port}"])
            out, busy, user, client_rss = run([ex, "net", "stream", f"127.0.0.1:{port}", "--conns", "10000", "--msg", "64k",
                                               "--ramp", "0s", "--time", f"{T}s", "--json", "--quiet", "--no-db"], srv.pid,
                                              rss=True)
            with open(f"/proc/{srv.pid}/status") as f:
                hwm = int(re.search(r"VmHWM:\s+(\d+) kB", f.read()).group(1))
            m = json.loads(out)["metrics"]
            srv.terminate()
            srv.wait()
            print("== memory, 10,000 connections, 64 KiB messages")
            print(f"   client max RSS {client_rss / 1024:.1f} MiB   server max RSS {hwm / 1024:.1f} MiB   "
                  f"goodput {m['mbit_s']:.0f} Mbit/s   connected in {m['connect_s']:.3f} s\n")
    finally:
        for p in servers.values():
            p.terminate()
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                p.kill()


if __name__ == "__main__":
    main()
