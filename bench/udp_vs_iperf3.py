#!/usr/bin/env python3
"""iotoll net udp against iperf3 -u. See udp-vs-iperf3.sh.

Cases: "lo", unlimited on loopback; "1g-100", "1g-500", "1g-950" and
"1g-max" on the built-in pair-1g lab (1 Gbit/s, MTU 1500, both endpoints in
host b, clients in host a, datagrams a -> b) at 100, 500, 950 Mbit/s and
unlimited. Every round runs both tools back to back, the order alternating.
Both send 1472-byte datagrams on one flow; iotoll --ramp R --time T, iperf3
-O R -t T (iperf3 omits its first R seconds from the figures).

Figures: goodput (what the receiver counted: iotoll's metrics.mbit_s,
iperf3's end.sum_received.bits_per_second), the rate the sender achieved
(offered_mbit_s; iperf3's end.sum_sent), loss % (iotoll's loss_pct,
iperf3's end.sum.lost_percent) and CPU per payload: the whole host's busy
CPU over the client's whole run (ramp-up or omitted seconds included, the
same for both) per KB received. On loopback and in a lab both ends are this
host's kernel, so that covers both ends and the shaper. Beside it, the two
tools' own CPU per KB: the client's and its endpoint's processes over the
same run, exact (the scheduler's runtime). Whole-host CPU comes from
/proc/stat's tick samples, which miss work done in short bursts between
ticks on a tickless kernel: iperf3's sender wakes every 1 ms and on this VM
its whole-host figure read below its own processes' exact CPU.
"""
import argparse
import json
import signal
import subprocess
import sys
import time

from benchlib import (children_cpu_s, host_busy_s, free_port, machine_line, median, report, rotation, stop,
                      tree_cpu_s)

SIZE = 1472
# (case, lab or None, rate in Mbit/s or None for unlimited)
CASES = [("lo", None, None), ("1g-100", "pair-1g", 100), ("1g-500", "pair-1g", 500),
         ("1g-950", "pair-1g", 950), ("1g-max", "pair-1g", None)]
IOTOLL_PORT, IPERF3_PORT = 7575, 5201  # inside a lab host's own namespace

ex = None
servers = []
labs_up = []


def lab(*args, check=True):
    p = subprocess.run([ex, "lab", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if check and p.returncode != 0:
        sys.exit(f"iotoll lab {' '.join(args)} failed ({p.returncode}):\n{p.stderr[-2000:]}")
    return p


def start(cmd, where, port):
    """Starts an endpoint (cmd, prefixed by `where` to run it in a lab host)
    and waits until its TCP port listens."""
    p = subprocess.Popen(where + cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    servers.append(p)
    for _ in range(100):
        if p.poll() is not None:
            sys.exit(f"endpoint did not start: {' '.join(cmd)}")
        ls = subprocess.run(where + ["ss", "-ltnH", f"sport = :{port}"], stdout=subprocess.PIPE, text=True).stdout
        if ls.strip():
            return p
        time.sleep(0.1)
    sys.exit(f"endpoint not listening on {port}: {' '.join(cmd)}")


def timed(cmd, server):
    """Runs a client; (stdout, host busy CPU seconds over its run, the
    client's and its endpoint's own CPU seconds over it)."""
    b0, c0, s0 = host_busy_s(), children_cpu_s(), tree_cpu_s(server.pid)
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    busy, own = host_busy_s() - b0, children_cpu_s() - c0 + tree_cpu_s(server.pid) - s0
    if p.returncode != 0:
        sys.exit(f"failed ({p.returncode}): {' '.join(cmd)}\n{p.stderr[-2000:]}")
    return p.stdout, busy, own


def one(tool, a, where, addr, rate, server):
    """One run of `tool` toward addr (its endpoint `server`): its figures."""
    if tool == "iotoll":
        cmd = [ex, "net", "udp", f"{addr}:{IOTOLL_PORT}", "--size", str(SIZE), "--ramp", f"{a.ramp}s",
               "--time", f"{a.time}s", "--json", "--quiet", "--no-db"]
        if rate:
            cmd += ["--rate", f"{rate}m"]
        out, busy, own = timed(where + cmd, server)
        m = json.loads(out)["metrics"]
        good, offered, loss = m["mbit_s"], m["offered_mbit_s"], m["loss_pct"]
        received = m["datagrams_received"] * SIZE
    else:
        cmd = ["iperf3", "-c", addr, "-p", str(IPERF3_PORT), "-u", "-l", str(SIZE), "-b",
               f"{rate}M" if rate else "0", "-t", str(a.time), "-O", str(a.ramp), "-J"]
        out, busy, own = timed(where + cmd, server)
        e = json.loads(out)["end"]
        good, offered = e["sum_received"]["bits_per_second"] / 1e6, e["sum_sent"]["bits_per_second"] / 1e6
        loss, received = e["sum"]["lost_percent"], e["sum_received"]["bytes"]
    per_kb = lambda s: s * 1e6 / (received / 1024) if received else float("nan")
    return {"mbit_s": good, "offered": offered, "loss_pct": loss,
            "cpu_us_per_kb": per_kb(busy), "own_us_per_kb": per_kb(own)}


def run_case(a, key, builtin, rate):
    where, addr, name = [], "127.0.0.1", None
    if builtin:
        name = f"r-udp-{key}-{a.tag}"[:24]
        lab("up", builtin, "--set", f"name={name}")
        labs_up.append(name)
        st = json.loads(lab("status", name, "--json").stdout)
        addr = next(h for h in st["hosts"] if h["name"] == "b")["addresses"][0]
        where_b = [ex, "lab", "exec", name, "b", "--"]
        where = [ex, "lab", "exec", name, "a", "--"]
    else:
        global IOTOLL_PORT, IPERF3_PORT
        IOTOLL_PORT, IPERF3_PORT = free_port(), free_port()
        where_b = []
    try:
        srv = {"iotoll": start([ex, "net", "serve", "--listen", f"{addr}:{IOTOLL_PORT}"], where_b, IOTOLL_PORT),
               "iperf3": start(["iperf3", "-s", "-B", addr, "-p", str(IPERF3_PORT)], where_b, IPERF3_PORT)}
        res = {"iotoll": [], "iperf3": []}
        for r in range(a.rounds):
            for tool in rotation(["iotoll", "iperf3"], r):
                x = one(tool, a, where, addr, rate, srv[tool])
                res[tool].append(x)
                print(f"  {key} round {r + 1} {tool:<7} goodput {x['mbit_s']:8.1f} Mbit/s  offered {x['offered']:8.1f}"
                      f"  loss {x['loss_pct']:6.3f} %  {x['cpu_us_per_kb']:6.2f} CPU us/KB (own {x['own_us_per_kb']:6.2f})",
                      file=sys.stderr)
    finally:
        while servers:
            stop(servers.pop())
        if name:
            labs_up.remove(name)
            lab("down", name, check=False)
    where_s = f"{builtin} a -> b" if builtin else "loopback"
    med = report(f"{where_s}, {f'{rate} Mbit/s' if rate else 'unlimited'}, 1 flow of {SIZE}-byte datagrams "
                 f"(medians of {a.rounds})", res,
                 [("mbit_s", "goodput Mbit/s"), ("offered", "offered Mbit/s"), ("loss_pct", "loss %"),
                  ("cpu_us_per_kb", "CPU us/KB"), ("own_us_per_kb", "own CPU us/KB")])
    d_loss = med["iotoll"]["loss_pct"] - med["iperf3"]["loss_pct"]
    print(f"   loss iotoll - iperf3: {d_loss:+.3f} points\n")


def on_signal(signum, _frame):
    sys.exit(128 + signum)   # runs the finally blocks (servers, labs)


def main():
    global ex
    ap = argparse.ArgumentParser()
    ap.add_argument("--iotoll", required=True)
    ap.add_argument("--tag", required=True, help="makes the lab names unique (the wrapper's PID)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--time", type=int, default=5)
    ap.add_argument("--ramp", type=int, default=1)
    ap.add_argument("--cases", default=",".join(c for c, _, _ in CASES))
    a = ap.parse_args()
    ex = a.iotoll
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGHUP, on_signal)
    wanted = a.cases.split(",")
    unknown = [w for w in wanted if w not in [c for c, _, _ in CASES]]
    if unknown:
        sys.exit(f"unknown case(s) {', '.join(unknown)}: use {', '.join(c for c, _, _ in CASES)}")
    print(machine_line())
    print(f"{a.rounds} rounds x ({a.ramp} s ramp/omit + {a.time} s), alternating iotoll/iperf3 -u\n")
    try:
        for key, builtin, rate in CASES:
            if key in wanted:
                run_case(a, key, builtin, rate)
    finally:
        while servers:
            stop(servers.pop())
        for n in list(labs_up):
            lab("down", n, check=False)


if __name__ == "__main__":
    main()
