"""One iotoll build against another on the same workloads, alternating, in
one run: the check that a change meant to change no behaviour (a refactor)
changed no figure beyond noise. Disk cases report IOPS and whole-host CPU
per I/O; the network case Mbit/s and whole-host CPU per MB, on loopback;
with --iscsi, 4k random and 64k sequential reads of a null LUN of a private
tgtd (the target of bench/iscsi_vs_libiscsi.py), IOPS and CPU per I/O.
Usage: old_vs_new.py --old BIN --new BIN [--rounds N] [--time S] [--dir D] [--iscsi]"""
import argparse
import json
import os
import subprocess
import tempfile
import time

import benchlib as bl


def disk(binary, path, args, secs):
    cmd = [binary, "disk", "run", "--target", path, "--time", f"{secs}s", "--ramp", "1s",
           "--json", "--quiet", "--no-db"] + args
    return bl.iotoll_run(cmd)


def stream(binary, port, secs):
    srv = subprocess.Popen([binary, "net", "serve", "--listen", f"127.0.0.1:{port}"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(0.5)
        out, cpu_s, wall, _ = bl.run([binary, "net", "stream", f"127.0.0.1:{port}", "--time",
                                   f"{secs}s", "--ramp", "1s", "--json", "--quiet", "--no-db"])
        m = json.loads(out)["metrics"]
        mb = m["mbit_s"] * m["window_s"] / 8
        return {"mbit_s": m["mbit_s"], "cpu_us_per_mb": cpu_s * 1e6 / mb}
    finally:
        bl.stop(srv)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--old", required=True)
    ap.add_argument("--new", required=True)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--time", type=int, default=3)
    ap.add_argument("--dir", default="/var/tmp")
    ap.add_argument("--iscsi", action="store_true", help="also the iSCSI cases (needs root and tgt)")
    a = ap.parse_args()
    print(bl.machine_line())
    tools = {"new": a.new, "old": a.old}
    with tempfile.TemporaryDirectory(dir=a.dir) as d:
        path = os.path.join(d, "t")
        subprocess.run(["dd", "if=/dev/zero", f"of={path}", "bs=1M", "count=1024"],
                       check=True, capture_output=True)
        cases = [
            ("4k randread QD32 io_uring", ["--bs", "4k", "--read", "100", "--random", "100",
                                           "--qd", "32", "--engine", "io_uring"]),
            ("4k randread QD1 psync", ["--bs", "4k", "--read", "100", "--random", "100",
                                       "--qd", "1", "--engine", "psync"]),
        ]
        for title, args in cases:
            res = {t: [] for t in tools}
            for r in range(a.rounds):
                for t in bl.rotation(list(tools), r):
                    res[t].append(disk(tools[t], path, args, a.time))
            bl.report(title, res, [("iops", "IOPS"), ("cpu_us_per_io", "CPU/IO")])
    res = {t: [] for t in tools}
    for r in range(a.rounds):
        for t in bl.rotation(list(tools), r):
            res[t].append(stream(tools[t], bl.free_port(), a.time))
    bl.report("1 TCP stream, loopback", res, [("mbit_s", "Mbit/s"), ("cpu_us_per_mb", "CPU/MB")])
    if a.iscsi:
        iscsi(tools, a.rounds, a.time)


def iscsi(tools, rounds, secs):
    import iscsi_vs_libiscsi as il
    tgt = il.Tgtd()
    try:
        tgt.adm("--op", "new", "--mode", "target", "--tid", "1", "-T", il.IQN)
        tgt.adm("--op", "new", "--mode", "logicalunit", "--tid", "1", "--lun", str(il.NULL_LUN),
                "--bstype", "null", "--backing-store", "/dev/null")
        tgt.adm("--op", "bind", "--mode", "target", "--tid", "1", "-I", "ALL")
        url = tgt.url(il.NULL_LUN)
        for title, bs, qd, random in [("iSCSI 4k randread QD32, null LUN", "4k", 32, True),
                                      ("iSCSI 64k seq read QD8, null LUN", "64k", 8, False)]:
            res = {t: [] for t in tools}
            for r in range(rounds):
                for t in bl.rotation(list(tools), r):
                    res[t].append(il.iotoll_case(tools[t], url, bs, qd, random, secs))
            bl.report(title, res, [("iops", "IOPS"), ("cpu_us_per_io", "CPU/IO")])
    finally:
        tgt.stop()


if __name__ == "__main__":
    main()
