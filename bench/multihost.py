#!/usr/bin/env python3
"""Sixteen endpoint pairs on one lab: iotoll's console and agents against
sixteen iperf3 clients. See multihost.sh.

The lab (unique name) has a server and c1..c16, one unshaped link each.
Sixteen `iperf3 -s` run in the server host for the whole run (ports
5201..5216). Each round, in alternating order:
- iotoll: `suite run` of a suite with pairs c_k -> server (one connection
  each, 128 KiB writes, tx) with `--lab`: the console starts an agent per
  host, runs PREPARE, START, RECORD ON/OFF. Its figure is metrics.mbit_s
  (the sum of the pairs, each counted by its receiver in its window); the
  run's skew_us.start/.stop; and the time from launching `suite run` to the
  RECORD ON instant the console prints.
- iperf3: sixteen `iperf3 -c` started at once, one per client host, `-O R
  -t T`; the figure is the sum of end.sum_received.bits_per_second.
"""
import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile
import time

from benchlib import machine_line, median, report, rotation, stop

PAIRS = 16
BASE_PORT = 5201
RATIO_TARGET = 1.00
SKEW_TARGET_US = 1000.0

ex = None
servers = []


def lab(*args, check=True):
    p = subprocess.run([ex, "lab", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if check and p.returncode != 0:
        sys.exit(f"iotoll lab {' '.join(args)} failed ({p.returncode}):\n{p.stderr[-2000:]}")
    return p


def lab_file(name):
    hosts = "".join(f"[[host]]\nname = \"{h}\"\n" for h in ["server"] + [f"c{k}" for k in range(1, PAIRS + 1)])
    return f"name = \"{name}\"\ndescription = \"bench: a server and {PAIRS} clients, unshaped\"\n{hosts}"


def suite_file(a, threads):
    pairs = ", ".join(f'["c{k}", "server"]' for k in range(1, PAIRS + 1))
    threads = f"threads = {threads}\n" if threads else ""
    return (f'name = "multihost-bench"\nreps = 1\n[[test]]\nname = "pairs16"\nkind = "net-stream"\n'
            f'dir = "tx"\nconns = 1\nmsg = "128k"\n{threads}ramp = "{a.ramp}s"\ntime = "{a.time}s"\npairs = [{pairs}]\n')


def run_iotoll(a, name, lab_path, suite, db):
    t0 = time.time()
    p = subprocess.run([ex, "suite", "run", suite, "--lab", name, "--db", db],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        sys.exit(f"iotoll suite run failed ({p.returncode}):\n{p.stderr[-3000:]}")
    on = None
    for line in p.stderr.splitlines():
        if "window on" in line and "opened at" in line:
            stamp = line.split("opened at ")[1].split(" ")[0]
            on = datetime.datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    if on is None:
        sys.exit(f"no RECORD ON line in the output:\n{p.stderr[-3000:]}")
    runs = subprocess.run([ex, "results", "list", "--db", db], stdout=subprocess.PIPE, text=True, check=True).stdout
    last = max(int(l.split()[0]) for l in runs.splitlines() if l.split() and l.split()[0].isdigit())
    show = json.loads(subprocess.run([ex, "results", "show", str(last), "--db", db, "--json"],
                                     stdout=subprocess.PIPE, text=True, check=True).stdout)
    doc = show["tests"][0]["reps"][0]["doc"]
    m = doc["metrics"]
    return {"mbit_s": m["mbit_s"], "skew_start_us": doc["skew_us"]["start"],
            "skew_stop_us": doc["skew_us"]["stop"], "clock_us": doc["skew_us"]["clock"],
            "to_record_on_s": on - t0, "cpu_pct": m.get("cpu_pct", float("nan")),
            "fairness": m.get("pair_fairness", float("nan")),
            "threads": next((n for n in doc.get("notes", []) if n.startswith("engine threads")), "")}


def run_iperf3(a, name, server_ip):
    procs = []
    for k in range(1, PAIRS + 1):
        procs.append(subprocess.Popen(
            [ex, "lab", "exec", name, f"c{k}", "--", "iperf3", "-c", server_ip, "-p", str(BASE_PORT + k - 1),
             "-t", str(a.time), "-O", str(a.ramp), "-l", "128K", "-J"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    total = 0.0
    for k, p in enumerate(procs, 1):
        out, err = p.communicate()
        if p.returncode != 0:
            sys.exit(f"iperf3 in c{k} failed ({p.returncode}): {err[-1000:]}{out[-1000:]}")
        total += json.loads(out)["end"]["sum_received"]["bits_per_second"] / 1e6
    return {"mbit_s": total}


def main():
    global ex
    ap = argparse.ArgumentParser()
    ap.add_argument("--iotoll", required=True)
    ap.add_argument("--tag", required=True)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--time", type=int, default=10)
    ap.add_argument("--ramp", type=int, default=2)
    # Engine threads per agent; by default none are set, and each agent
    # chooses (one per CPU, or per pair when it has more pairs).
    ap.add_argument("--threads", default="auto",
                    help="engine threads of every agent, or 'auto' for the agents' own choice; a comma list runs"
                         " each setting in the same rotation (e.g. auto,2)")
    a = ap.parse_args()
    ex = a.iotoll
    print(machine_line())
    name = f"bench-mh-{a.tag}"
    tmp = tempfile.mkdtemp(prefix="iotoll-bench-mh-")
    lab_path = os.path.join(tmp, "lab.toml")
    with open(lab_path, "w") as f:
        f.write(lab_file(name))
    settings = a.threads.split(",")
    if any(t != "auto" and not t.isdigit() for t in settings):
        sys.exit(f"--threads: 'auto' or a number, comma-separated; not {a.threads}")
    suites = {}
    for t in settings:
        tool = "iotoll" if t == settings[0] else f"iotoll-t{t}"
        suites[tool] = os.path.join(tmp, f"pairs16-{t}.toml")
        with open(suites[tool], "w") as f:
            f.write(suite_file(a, None if t == "auto" else int(t)))
    db = os.path.join(tmp, "r.db")
    lab("up", lab_path)
    try:
        st = json.loads(lab("status", name, "--json").stdout)
        server_ip = next(h for h in st["hosts"] if h["name"] == "server")["addresses"][0]
        for k in range(PAIRS):
            servers.append(subprocess.Popen([ex, "lab", "exec", name, "server", "--", "iperf3", "-s", "-B", server_ip,
                                             "-p", str(BASE_PORT + k)], stdout=subprocess.DEVNULL,
                                            stderr=subprocess.DEVNULL))
        time.sleep(1.0)
        print(f"== lab {name}: server {server_ip} and c1..c{PAIRS}, unshaped; {PAIRS} pairs c_k -> server, "
              f"1 stream each, 128 KiB writes, ramp {a.ramp} s, window {a.time} s", file=sys.stderr)
        tools = list(suites) + ["iperf3"]
        res = {t: [] for t in tools}
        for r in range(a.rounds):
            for tool in rotation(tools, r):
                x = run_iotoll(a, name, lab_path, suites[tool], db) if tool in suites else run_iperf3(a, name, server_ip)
                res[tool].append(x)
                extra = ""
                if tool in suites:
                    extra = (f"  skew start {x['skew_start_us']:.0f} us stop {x['skew_stop_us']:.0f} us "
                             f"(clock +-{x['clock_us']:.0f} us)  RECORD ON {x['to_record_on_s']:.2f} s after launch  "
                             f"fairness {x['fairness']:.3f}  {x['threads']}")
                print(f"  round {r + 1} {tool:<7} {x['mbit_s']:10.1f} Mbit/s{extra}", file=sys.stderr)
    finally:
        while servers:
            stop(servers.pop())
        lab("down", name, check=False)
    med = report(f"{PAIRS} pairs, aggregate goodput (medians of {a.rounds})", res, [("mbit_s", "Mbit/s")])
    ratio = med["iotoll"]["mbit_s"] / med["iperf3"]["mbit_s"]
    paired = [x["mbit_s"] / y["mbit_s"] for x, y in zip(res["iotoll"], res["iperf3"])]
    skews = [x["skew_start_us"] for x in res["iotoll"]]
    stops = [x["skew_stop_us"] for x in res["iotoll"]]
    to_on = [x["to_record_on_s"] for x in res["iotoll"]]
    print(f"   per-round ratios iotoll/iperf3: {' '.join(f'{p:.3f}' for p in paired)} (median {median(paired):.4f})")
    print(f"   iotoll/iperf3 {ratio:.4f} (target >= {RATIO_TARGET:.2f}): {'PASS' if ratio >= RATIO_TARGET else 'FAIL'}")
    print(f"   start skew across 17 agents: median {median(skews):.0f} us, max {max(skews):.0f} us "
          f"(target < {SKEW_TARGET_US:.0f} us): {'PASS' if max(skews) < SKEW_TARGET_US else 'FAIL'}; "
          f"stop skew median {median(stops):.0f} us, max {max(stops):.0f} us")
    print(f"   suite run -> RECORD ON: median {median(to_on):.2f} s, of which {a.ramp} s ramp-up "
          f"(agents started, connected, clocks probed, 16 pairs connected: {median(to_on) - a.ramp:.2f} s)")


if __name__ == "__main__":
    main()
