#!/usr/bin/env python3
"""iotoll's goodput on a shaped lab link against iperf3's and against the
shaper's rate. See lab-accuracy.sh.

Per case, a lab of its own (a unique name, `--set name=...`) is brought up;
both endpoints (`iotoll net serve`, `iperf3 -s`) run in host b for the whole
case; clients run in host a, one stream a->b, alternating which tool goes
first every round. Both measure the same window: iotoll `--ramp R --time T`,
iperf3 `-O R -t T` (iperf3 runs the omitted seconds on top of -t), both with
128 KiB writes. iotoll's figure is metrics.mbit_s (payload counted by the
receiver in its window), iperf3's end.sum_received.bits_per_second (the
receiver's count). The rate is the link's nominal rate (lab status
rate_bps); a single TCP stream with timestamps peaks at
(MTU - 52) / (MTU + 38) of it on Ethernet, which the lab's shaper models
(docs/lab.md): 94.1 % at MTU 1500, 99.0 % at MTU 9000.
"""
import argparse
import json
import signal
import subprocess
import sys
import time

from benchlib import machine_line, median, report, stop

# (key, built-in lab, MTU)
CASES = [("1g", "pair-1g", 1500), ("10g", "pair-10g", 9000)]
RATIO_TOL = 0.01      # iotoll within 1 % of iperf3
RATE_TARGET = 0.93    # iotoll >= 93 % of the shaped rate
IOTOLL_PORT, IPERF3_PORT = 7575, 5201  # inside host b's own namespace

ex = None
servers = []          # Popen of the endpoints running in a lab
labs_up = []          # lab names this run brought up


def lab(*args, check=True, capture=True):
    p = subprocess.run([ex, "lab", *args], stdout=subprocess.PIPE if capture else None,
                       stderr=subprocess.PIPE, text=True)
    if check and p.returncode != 0:
        sys.exit(f"iotoll lab {' '.join(args)} failed ({p.returncode}):\n{p.stderr[-2000:]}")
    return p


def in_host(name, host, cmd):
    """Runs cmd in a lab host; returns its stdout (exits on failure)."""
    p = lab("exec", name, host, "--", *cmd, check=False)
    if p.returncode != 0:
        sys.exit(f"failed ({p.returncode}) in {name}/{host}: {' '.join(cmd)}\n{p.stderr[-2000:]}{p.stdout[-2000:]}")
    return p.stdout


def start_in_host(name, host, cmd, port):
    """Starts cmd in a lab host in the background (`lab exec` execs it, so
    the Popen's PID is the endpoint's) and waits until port listens."""
    p = subprocess.Popen([ex, "lab", "exec", name, host, "--", *cmd],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    servers.append(p)
    for _ in range(100):
        if p.poll() is not None:
            sys.exit(f"endpoint did not start in {name}/{host}: {' '.join(cmd)}")
        ls = lab("exec", name, host, "--", "ss", "-ltnH", f"sport = :{port}", check=False).stdout
        if ls.strip():
            return p
        time.sleep(0.1)
    sys.exit(f"endpoint not listening on port {port} in {name}/{host} after 10 s: {' '.join(cmd)}")


def stop_servers():
    while servers:
        stop(servers.pop())


def take_down(name):
    if name in labs_up:
        labs_up.remove(name)
        lab("down", name, check=False)


def run_case(a, key, builtin, mtu):
    name = f"bench-{key}-{a.tag}"
    lab("up", builtin, "--set", f"name={name}", "--set", f"mtu={mtu}")
    labs_up.append(name)
    try:
        st = json.loads(lab("status", name, "--json").stdout)
        hb = next(h for h in st["hosts"] if h["name"] == "b")
        link = hb["links"][0]
        b_addr, rate_bps = hb["addresses"][0], link["rate_bps"]
        if link["mtu"] != mtu:
            sys.exit(f"{name}: link MTU is {link['mtu']}, not {mtu}")
        limit = (mtu - 52) / (mtu + 38)
        print(f"== {builtin} as {name}, MTU {mtu}, rate {rate_bps / 1e9:g} Gbit/s "
              f"(single-stream TCP limit with timestamps {100 * limit:.1f} %), a -> b {b_addr}", file=sys.stderr)

        start_in_host(name, "b", [ex, "net", "serve", "--listen", f"{b_addr}:{IOTOLL_PORT}"], IOTOLL_PORT)
        start_in_host(name, "b", ["iperf3", "-s", "-B", b_addr, "-p", str(IPERF3_PORT)], IPERF3_PORT)

        res = {"iotoll": [], "iperf3": []}
        for r in range(a.rounds):
            for tool in (["iotoll", "iperf3"] if r % 2 == 0 else ["iperf3", "iotoll"]):
                if tool == "iotoll":
                    d = json.loads(in_host(name, "a", [ex, "net", "stream", f"{b_addr}:{IOTOLL_PORT}",
                                                       "--msg", "128k", "--ramp", f"{a.ramp}s", "--time", f"{a.time}s",
                                                       "--json", "--quiet", "--no-db"]))
                    m = d["metrics"]
                    mbit, retr = m["mbit_s"], m.get("retransmits", 0)
                    extra = (f"  CPU {m['cpu_pct']:.0f} % (others {m.get('cpu_others_pct', 0):.1f} %, "
                             f"steal {m.get('cpu_steal_pct', 0):.1f} %)")
                else:
                    d = json.loads(in_host(name, "a", ["iperf3", "-c", b_addr, "-p", str(IPERF3_PORT),
                                                       "-t", str(a.time), "-O", str(a.ramp), "-l", "128K", "-J"]))
                    e = d["end"]
                    mbit, retr = e["sum_received"]["bits_per_second"] / 1e6, e["sum_sent"].get("retransmits", 0)
                    extra = ""
                pct = 100 * mbit * 1e6 / rate_bps
                res[tool].append({"mbit_s": mbit, "pct_rate": pct, "retransmits": retr})
                print(f"  {key} round {r + 1} {tool:<7} {mbit:10.1f} Mbit/s  {pct:6.2f} % of rate  "
                      f"{retr:.0f} retransmits{extra}", file=sys.stderr)
        stop_servers()
    finally:
        stop_servers()
        take_down(name)

    med = report(f"{builtin}, MTU {mtu}, rate {rate_bps / 1e9:g} Gbit/s, 1 stream a->b "
                 f"(medians of {a.rounds}; TCP limit {100 * limit:.1f} % of rate)", res,
                 [("mbit_s", "goodput Mbit/s"), ("pct_rate", "% of rate"), ("retransmits", "retransmits")])
    ratio = med["iotoll"]["mbit_s"] / med["iperf3"]["mbit_s"]
    # Each round's two runs are adjacent: their ratio is less exposed to a
    # drift of the host's load over the case than the ratio of medians.
    paired = [x["mbit_s"] / y["mbit_s"] for x, y in zip(res["iotoll"], res["iperf3"])]
    print(f"   per-round ratios iotoll/iperf3: {' '.join(f'{p:.3f}' for p in paired)} (median {median(paired):.4f})")
    ok1 = abs(ratio - 1) <= RATIO_TOL
    ok2 = med["iotoll"]["pct_rate"] >= 100 * RATE_TARGET
    print(f"   iotoll/iperf3 {ratio:.4f} ({100 * (ratio - 1):+.2f} %; target within {100 * RATIO_TOL:.0f} %): "
          f"{'PASS' if ok1 else 'FAIL'}")
    print(f"   iotoll {med['iotoll']['pct_rate']:.2f} % of the rate (target >= {100 * RATE_TARGET:.0f} %; "
          f"iperf3 {med['iperf3']['pct_rate']:.2f} %): {'PASS' if ok2 else 'FAIL'}")
    print()
    return ok1 and ok2


def on_signal(signum, _frame):
    sys.exit(128 + signum)   # runs the finally blocks (servers, labs)


def main():
    global ex
    ap = argparse.ArgumentParser()
    ap.add_argument("--iotoll", required=True)
    ap.add_argument("--tag", required=True, help="makes the lab names unique (the wrapper's PID)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--time", type=int, default=10)
    ap.add_argument("--ramp", type=int, default=2)
    ap.add_argument("--cases", default="1g,10g")
    a = ap.parse_args()
    ex = a.iotoll
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGHUP, on_signal)
    wanted = a.cases.split(",")
    print(machine_line())
    print(f"{a.rounds} rounds x ({a.ramp} s ramp/omit + {a.time} s), alternating iotoll/iperf3; lab hosts a -> b\n")
    ok = True
    try:
        for key, builtin, mtu in CASES:
            if key in wanted:
                ok &= run_case(a, key, builtin, mtu)
    finally:
        stop_servers()
        for n in list(labs_up):
            take_down(n)
    print("all targets met" if ok else "some targets missed")


if __name__ == "__main__":
    main()
