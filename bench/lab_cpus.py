#!/usr/bin/env python3
"""Per-host CPU of a one-machine lab with and without CPU sets, beside
mpstat over the same window. See lab-cpus.sh.

Per round and mode, a pair-1g lab of its own is brought up (`sets`: the
built-in's cpus = "auto", a and b on separate CPUs; `none`: --set
cpus.a=none --set cpus.b=none, every host on every CPU); the endpoint runs
in b (`iotoll net serve`), one stream a->b runs in a with --json, and
`mpstat -P ALL T 1` starts when the client's ramp-up ends (the window's
opening, to within the ramp's scheduling) in the root namespace. Modes
alternate which goes first every round. Printed per mode: goodput, each
host's busy % and CPU count as iotoll measured it, each host's P/E index
(Mbit/s per % CPU), the machine's busy % beside them, and mpstat's per-CPU
and all-CPU busy (100 - %idle - %iowait).
"""
import argparse
import json
import os
import subprocess
import sys
import time

from benchlib import machine_line, median

ex = None


def lab(*args, check=True):
    p = subprocess.run([ex, "lab", *args], capture_output=True, text=True)
    if check and p.returncode != 0:
        sys.exit(f"iotoll lab {' '.join(args)}: {p.stderr.strip()}")
    return p.stdout


def mpstat(seconds):
    return subprocess.Popen(["mpstat", "-P", "ALL", "-o", "JSON", str(seconds), "1"],
                            stdout=subprocess.PIPE, text=True)


def mpstat_busy(p):
    out, _ = p.communicate(timeout=120)
    stats = json.loads(out)["sysstat"]["hosts"][0]["statistics"][0]["cpu-load"]
    return {s["cpu"]: 100.0 - s["idle"] - s["iowait"] for s in stats}


def one(mode, tag, seconds, ramp):
    name = f"bench-cpus-{mode}-{tag}"
    sets = ["--set", f"name={name}"]
    if mode == "none":
        sets += ["--set", "cpus.a=none", "--set", "cpus.b=none"]
    lab("up", "pair-1g", *sets)
    try:
        st = json.loads(lab("status", name, "--json"))
        b_ip = next(h for h in st["hosts"] if h["name"] == "b")["addresses"][0]
        srv = subprocess.Popen([ex, "lab", "exec", name, "b", "--", ex, "net", "serve", "--once",
                                "--listen", f"{b_ip}:7575"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(0.5)
        cli = subprocess.Popen([ex, "lab", "exec", name, "a", "--", ex, "net", "stream", b_ip,
                                "--time", f"{seconds}s", "--ramp", f"{ramp}s", "--json", "--no-db"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(ramp)
        mp = mpstat(seconds)
        out, err = cli.communicate(timeout=seconds + ramp + 60)
        busy = mpstat_busy(mp)
        srv.wait(timeout=30)
        if cli.returncode != 0:
            sys.exit(f"net stream ({mode}): {err.strip()}")
        return json.loads(out), busy
    finally:
        lab("down", name, check=False)


def row(doc, busy):
    m = doc["metrics"]
    loc, rem = doc["cpu"]["local"], doc["cpu"]["remote"]
    machine = (loc.get("machine") or loc)["busy_pct"]
    mbit = m["mbit_s"]
    return {
        "mbit": mbit,
        "a": loc["busy_pct"], "a_cpus": loc["cpus"], "a_self": loc.get("self_pct", 0.0),
        "b": rem["busy_pct"], "b_cpus": rem["cpus"], "b_self": rem.get("self_pct", 0.0),
        "pe_a": mbit / loc["busy_pct"], "pe_b": mbit / rem["busy_pct"],
        "machine": machine,
        "mp0": busy.get("0", float("nan")), "mp1": busy.get("1", float("nan")),
        "mpall": busy.get("all", float("nan")),
        "a_sirq": loc["modes"]["softirq"], "b_sirq": rem["modes"]["softirq"],
        "interfered": bool((loc.get("interference") or {}).get("interfered")
                           or (rem.get("interference") or {}).get("interfered")),
    }


def main():
    global ex
    ap = argparse.ArgumentParser()
    ap.add_argument("--iotoll", required=True)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--time", type=int, default=10)
    ap.add_argument("--ramp", type=int, default=2)
    a = ap.parse_args()
    ex = a.iotoll
    print(machine_line())
    rows = {"sets": [], "none": []}
    for r in range(a.rounds):
        order = ["sets", "none"] if r % 2 == 0 else ["none", "sets"]
        for mode in order:
            doc, busy = one(mode, f"{os.getpid()}-{r}", a.time, a.ramp)
            x = row(doc, busy)
            rows[mode].append(x)
            print(f"round {r + 1} {mode:4}: {x['mbit']:.1f} Mbit/s; a {x['a']:.1f} % of {x['a_cpus']} "
                  f"(self {x['a_self']:.1f}), b {x['b']:.1f} % of {x['b_cpus']} (self {x['b_self']:.1f}); "
                  f"machine {x['machine']:.1f}; mpstat 0/1/all {x['mp0']:.1f}/{x['mp1']:.1f}/{x['mpall']:.1f}"
                  f"{'  INTERFERED' if x['interfered'] else ''}", flush=True)
    print("\nmedians | Mbit/s | a busy % (cpus) | b busy % (cpus) | P/E a | P/E b | machine % | "
          "mpstat CPU0 / CPU1 / all | softirq a / b")
    for mode, xs in rows.items():
        md = lambda k: median([x[k] for x in xs])
        print(f"{mode:4} | {md('mbit'):.1f} | {md('a'):.1f} ({xs[0]['a_cpus']}) | {md('b'):.1f} ({xs[0]['b_cpus']}) | "
              f"{md('pe_a'):.2f} | {md('pe_b'):.2f} | {md('machine'):.1f} | "
              f"{md('mp0'):.1f} / {md('mp1'):.1f} / {md('mpall'):.1f} | {md('a_sirq'):.1f} / {md('b_sirq'):.1f}"
              f" | interfered rounds {sum(x['interfered'] for x in xs)}")


if __name__ == "__main__":
    main()
