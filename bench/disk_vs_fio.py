#!/usr/bin/env python3
"""iotoll vs fio, alternating, on one file. See disk-vs-fio.sh.

Both tools are measured the same way from outside: whole-host busy CPU from
/proc/stat over the tool's whole run (no ramp-up, so every I/O the tool
reports falls inside it), divided by the I/Os the tool reports. iotoll's own
in-window figure is printed beside it as a cross-check. iotoll runs with
--align equal to the transfer size, which is fio's default (blockalign = bs);
iotoll's own default is Iometer's sector alignment.
"""
import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time

CLK_TCK = os.sysconf("SC_CLK_TCK")


def host_busy_ticks():
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:9]]
    user, nice, system, idle, iowait, irq, softirq, steal = v
    return user + nice + system + irq + softirq + steal


def run(cmd):
    """Runs cmd; returns (stdout, busy host CPU seconds, wall s, max RSS KiB)."""
    b0, t0 = host_busy_ticks(), time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = p.communicate()
    t1, b1 = time.monotonic(), host_busy_ticks()
    ru = p.returncode
    if ru != 0:
        sys.exit(f"command failed ({ru}): {' '.join(cmd)}\n{err.decode()}")
    return out, (b1 - b0) / CLK_TCK, t1 - t0


def fio_case(path, size, bs, qd, engine, secs):
    cmd = [
        "fio", "--name=bench", f"--filename={path}", "--direct=1", "--rw=randread",
        f"--bs={bs}", f"--iodepth={qd}", f"--ioengine={engine}", f"--size={size}",
        "--time_based", f"--runtime={secs}", "--ramp_time=0", "--norandommap",
        "--randrepeat=0", "--output-format=json",
    ]
    out, cpu_s, wall = run(cmd)
    j = json.loads(out)["jobs"][0]["read"]
    ios = j["total_ios"]
    return {"iops": j["iops"], "cpu_us_per_io": cpu_s * 1e6 / ios, "wall": wall}


def iotoll_case(exe, path, bs, qd, engine, secs):
    cmd = [
        exe, "disk", "run", "--target", path, "--bs", bs, "--read", "100", "--random", "100",
        "--qd", str(qd), "--engine", engine, "--align", bs, "--ramp", "0s", "--time", f"{secs}s", "--json", "--quiet", "--no-db",
    ]
    out, cpu_s, wall = run(cmd)
    d = json.loads(out)
    m = d["metrics"]
    ios = m["iops"] * m["window_s"]
    return {
        "iops": m["iops"],
        "cpu_us_per_io": cpu_s * 1e6 / ios,
        "in_window_cpu_us_per_io": m.get("cpu_us_per_io"),
        "wall": wall,
    }


def rss_check(exe, path, secs):
    """Max RSS of 4 workers x QD 256 x 64k (buffers: 64 MiB)."""
    cmd = [exe, "disk", "run", "--target", path, "--bs", "64k", "--read", "100", "--random", "100",
           "--qd", "256", "--workers", "4", "--ramp", "0s", "--time", f"{secs}s", "--json", "--quiet", "--no-db"]
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, ru = os.wait4(p.pid, 0)
    if status != 0:
        sys.exit("rss run failed: " + p.stderr.read().decode())
    return ru.ru_maxrss  # KiB on Linux


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iotoll", required=True)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--time", type=int, default=10, help="seconds per run")
    ap.add_argument("--dir", default="target/bench", help="where the test file goes")
    ap.add_argument("--size", default="1g")
    ap.add_argument("--cases", default="qd32,qd1,rss", help="comma list of qd32, qd1, rss")
    a = ap.parse_args()
    os.makedirs(a.dir, exist_ok=True)
    path = os.path.join(a.dir, "disk-vs-fio.tst")
    if not os.path.exists(path):
        subprocess.run([a.iotoll, "disk", "run", "--target", path, "--create", "--keep", "--size", a.size,
                        "--time", "1s", "--ramp", "0s", "--quiet", "--json", "--no-db"], check=True, stdout=subprocess.DEVNULL)
    size = os.path.getsize(path)
    cpu = open("/proc/cpuinfo").read().split("model name")[1].split("\n")[0].strip(": \t")
    print(f"machine: {platform.node()}  {os.cpu_count()} CPUs  {cpu}  kernel {platform.release()}")
    fio_ver = subprocess.run(["fio", "--version"], capture_output=True, text=True).stdout.strip()
    print(f"file: {path} ({size >> 20} MiB)  fio {fio_ver}  {a.rounds} rounds x {a.time} s, alternating\n")

    cases = {"qd32": ("4k randread QD32 io_uring", "4k", 32, "io_uring", "io_uring"),
             "qd1": ("4k randread QD1 psync", "4k", 1, "psync", "psync")}
    wanted = a.cases.split(",")
    for name, bs, qd, fio_engine, engine in (cases[c] for c in wanted if c in cases):
        res = {"fio": [], "iotoll": []}
        for r in range(a.rounds):
            order = ["fio", "iotoll"] if r % 2 == 0 else ["iotoll", "fio"]
            for tool in order:
                if tool == "fio":
                    res[tool].append(fio_case(path, size, bs, qd, fio_engine, a.time))
                else:
                    res[tool].append(iotoll_case(a.iotoll, path, bs, qd, engine, a.time))
                x = res[tool][-1]
                print(f"  round {r + 1} {tool:<6} {x['iops']:>10.0f} IOPS  {x['cpu_us_per_io']:7.2f} us CPU/IO", file=sys.stderr)
        med = {t: {k: statistics.median(x[k] for x in v) for k in ("iops", "cpu_us_per_io")} for t, v in res.items()}
        inwin = statistics.median(x["in_window_cpu_us_per_io"] for x in res["iotoll"])
        print(f"== {name}")
        print(f"   {'':8}{'median IOPS':>14}{'CPU us/IO (host)':>20}")
        for t in ("fio", "iotoll"):
            print(f"   {t:<8}{med[t]['iops']:>14.0f}{med[t]['cpu_us_per_io']:>20.2f}")
        print(f"   ratio iotoll/fio: IOPS {med['iotoll']['iops'] / med['fio']['iops']:.3f}   "
              f"CPU per I/O {med['iotoll']['cpu_us_per_io'] / med['fio']['cpu_us_per_io']:.3f}")
        print(f"   (iotoll's own in-window cpu_us_per_io, median: {inwin:.2f})\n")

    if "rss" not in wanted:
        return
    rss = rss_check(a.iotoll, path, min(a.time, 5))
    print(f"== RSS, 4 workers x QD 256 x 64k: {rss / 1024:.1f} MiB max RSS (I/O buffers: 64.0 MiB)")


if __name__ == "__main__":
    main()
