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


def fio_case(path, size, bs, qd, engine, secs, extra=()):
    cmd = [
        "fio", "--name=bench", f"--filename={path}", "--direct=1", "--rw=randread",
        f"--bs={bs}", f"--iodepth={qd}", f"--ioengine={engine}", f"--size={size}",
        "--time_based", f"--runtime={secs}", "--ramp_time=0", "--norandommap",
        "--randrepeat=0", "--output-format=json", *extra,
    ]
    out, cpu_s, wall = run(cmd)
    j = json.loads(out)["jobs"][0]["read"]
    ios = j["total_ios"]
    return {
        "iops": j["iops"],
        "cpu_us_per_io": cpu_s * 1e6 / ios,
        # Little's law on fio's own figures: lat runs from fio's time stamp
        # before it submits (start_time) to the completion it reaps, the
        # interval iotoll's latency covers; clat starts after the submitting
        # system call returned.
        "qd_achieved": j["iops"] * j["lat_ns"]["mean"] / 1e9,
        "qd_clat": j["iops"] * j["clat_ns"]["mean"] / 1e9,
        "lat_mean_us": j["lat_ns"]["mean"] / 1e3,
        "wall": wall,
    }


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
        # Measured directly (integral of the in-flight count), and by
        # Little's law from iotoll's IOPS and mean latency.
        "qd_achieved": m["qd_achieved"],
        "qd_little": m["iops"] * m["lat_mean_us"] / 1e6,
        "lat_mean_us": m["lat_mean_us"],
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

    # io_uring: fio registers the file and the buffers as iotoll does
    # (--registerfiles --fixedbufs), and submits the way iotoll does: every
    # free slot refilled, then one io_uring_enter that submits them all and
    # waits for a completion (iodepth_batch_submit=QD: fio commits what is
    # queued before it waits; iodepth_batch_complete_min=1). "fio-each" is
    # fio's default, one io_uring_enter per I/O, shown for reference.
    def uring_fio(qd):
        base = ["--registerfiles", "--fixedbufs"]
        return [("fio", base + [f"--iodepth_batch_submit={qd}", "--iodepth_batch_complete_min=1",
                                f"--iodepth_batch_complete_max={qd}"]),
                ("fio-each", base)]
    cases = {"qd32": ("4k randread QD32 io_uring", "4k", 32, "io_uring", "io_uring", uring_fio(32)),
             "qd1": ("4k randread QD1 psync", "4k", 1, "psync", "psync", [("fio", [])])}
    wanted = a.cases.split(",")
    for name, bs, qd, fio_engine, engine, fios in (cases[c] for c in wanted if c in cases):
        tools = [t for t, _ in fios] + ["iotoll"]
        fio_args = dict(fios)
        res = {t: [] for t in tools}
        for r in range(a.rounds):
            # Rotate the order every round.
            order = tools[r % len(tools):] + tools[:r % len(tools)]
            for tool in order:
                if tool == "iotoll":
                    res[tool].append(iotoll_case(a.iotoll, path, bs, qd, engine, a.time))
                else:
                    res[tool].append(fio_case(path, size, bs, qd, fio_engine, a.time, fio_args[tool]))
                x = res[tool][-1]
                print(f"  round {r + 1} {tool:<8} {x['iops']:>10.0f} IOPS  {x['cpu_us_per_io']:7.2f} us CPU/IO"
                      f"  lat {x['lat_mean_us']:8.1f} us  qd_achieved {x['qd_achieved']:5.2f}", file=sys.stderr)
        keys = ("iops", "cpu_us_per_io", "lat_mean_us", "qd_achieved")
        med = {t: {k: statistics.median(x[k] for x in v) for k in keys} for t, v in res.items()}
        inwin = statistics.median(x["in_window_cpu_us_per_io"] for x in res["iotoll"])
        little = statistics.median(x["qd_little"] for x in res["iotoll"])
        print(f"== {name}")
        print(f"   {'':10}{'median IOPS':>14}{'CPU us/IO (host)':>20}{'lat mean us':>14}{'qd_achieved':>14}")
        for t in tools:
            print(f"   {t:<10}{med[t]['iops']:>14.0f}{med[t]['cpu_us_per_io']:>20.2f}"
                  f"{med[t]['lat_mean_us']:>14.1f}{med[t]['qd_achieved']:>14.2f}")
        for t in tools[:-1]:
            print(f"   ratio iotoll/{t}: IOPS {med['iotoll']['iops'] / med[t]['iops']:.3f}   "
                  f"CPU per I/O {med['iotoll']['cpu_us_per_io'] / med[t]['cpu_us_per_io']:.3f}")
        print(f"   (qd_achieved: iotoll measured directly; fio = fio IOPS x fio mean lat."
              f" iotoll's IOPS x mean lat, median: {little:.2f})")
        if "qd_clat" in res[tools[0]][0]:
            clat = {t: statistics.median(x["qd_clat"] for x in res[t]) for t in tools[:-1]}
            print("   (fio IOPS x mean clat, median: " + ", ".join(f"{t} {v:.2f}" for t, v in clat.items()) + ")")
        print(f"   (iotoll's own in-window cpu_us_per_io, median: {inwin:.2f})\n")

    if "rss" not in wanted:
        return
    rss = rss_check(a.iotoll, path, min(a.time, 5))
    print(f"== RSS, 4 workers x QD 256 x 64k: {rss / 1024:.1f} MiB max RSS (I/O buffers: 64.0 MiB)")


if __name__ == "__main__":
    main()
