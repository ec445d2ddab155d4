#!/usr/bin/env python3
"""iotoll vs fio, alternating, on one file. See disk-vs-fio.sh.

Both tools are measured the same way from outside: whole-host busy CPU from
/proc/stat over the tool's whole run (no ramp-up, so every I/O the tool
reports falls inside it), divided by the I/Os the tool reports. iotoll's own
in-window figure is printed beside it as a cross-check. iotoll runs with
--align equal to the transfer size, which is fio's default (blockalign = bs);
iotoll's own default is Iometer's sector alignment.

Cases: qd32, qd1 and rss on one file (see BENCHMARKS.md); "multi", 4 files,
one worker each, 4k random read at QD 8 per file; "mixed", Iometer's File
Server spec (docs/iometer-patterns.md) at QD 16 on one file, 20 % writes.
"""
import ctypes
import ctypes.util
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

from benchlib import iotoll_run, machine_line, max_rss_kib, rotation, run


def fio_case(path, size, bs, qd, engine, secs, extra=()):
    cmd = [
        "fio", "--name=bench", f"--filename={path}", "--direct=1", "--rw=randread",
        f"--bs={bs}", f"--iodepth={qd}", f"--ioengine={engine}", f"--size={size}",
        "--time_based", f"--runtime={secs}", "--ramp_time=0", "--norandommap",
        "--randrepeat=0", "--output-format=json", *extra,
    ]
    out, cpu_s, wall, own_s = run(cmd)
    j = json.loads(out)["jobs"][0]["read"]
    ios = j["total_ios"]
    return {
        "iops": j["iops"],
        "cpu_us_per_io": cpu_s * 1e6 / ios,
        "proc_us_per_io": own_s * 1e6 / ios,
        # Little's law on fio's own figures: lat runs from fio's time stamp
        # before it submits (start_time) to the completion it reaps, the
        # interval iotoll's latency covers; clat starts after the submitting
        # system call returned.
        "qd_achieved": j["iops"] * j["lat_ns"]["mean"] / 1e9,
        "qd_clat": j["iops"] * j["clat_ns"]["mean"] / 1e9,
        "lat_mean_us": j["lat_ns"]["mean"] / 1e3,
        "wall": wall,
    }


FILE_SERVER_BSSPLIT = "512/10:1k/5:2k/5:4k/60:8k/2:16k/4:32k/4:64k/10"


def fio_jobs(common, jobs, secs, extra=()):
    """Runs fio with options `common` shared by every job and one job per
    entry of `jobs` (its own options, e.g. --filename); adds reads and writes
    of all jobs. The total is what fio's group_reporting prints (all I/Os
    over the longest job's runtime); group_reporting itself is not given so
    that the per-job (per-file) figures are there too."""
    cmd = ["fio", *common, "--time_based", f"--runtime={secs}", "--ramp_time=0", "--norandommap",
           "--randrepeat=0", "--output-format=json", *extra]
    for i, opts in enumerate(jobs):
        cmd += [f"--name=j{i + 1}", *opts]
    out, cpu_s, wall, own_s = run(cmd)
    per_job, ios, reads, lat_sum, clat_sum, runtime_ms = [], 0, 0, 0.0, 0.0, 0
    for j in json.loads(out)["jobs"]:
        n = sum(j[d]["total_ios"] for d in ("read", "write"))
        reads += j["read"]["total_ios"]
        rt = max(j[d]["runtime"] for d in ("read", "write"))
        per_job.append(n * 1000 / rt if rt else 0.0)
        ios += n
        runtime_ms = max(runtime_ms, rt)
        lat_sum += sum(j[d]["total_ios"] * j[d]["lat_ns"]["mean"] for d in ("read", "write"))
        clat_sum += sum(j[d]["total_ios"] * j[d]["clat_ns"]["mean"] for d in ("read", "write"))
    iops = ios * 1000 / runtime_ms
    lat_ns = lat_sum / ios
    return {
        "iops": iops,
        "cpu_us_per_io": cpu_s * 1e6 / ios,
        "proc_us_per_io": own_s * 1e6 / ios,
        # Little's law, per job (per worker), on fio's own figures.
        "qd_achieved": iops * lat_ns / 1e9 / len(jobs),
        "qd_clat": iops * (clat_sum / ios) / 1e9 / len(jobs),
        "lat_mean_us": lat_ns / 1e3,
        "per_target_iops": per_job,
        "read_pct": 100 * reads / ios,
        "wall": wall,
    }


def fio_multi(paths, size, secs, extra=()):
    common = ["--direct=1", "--rw=randread", "--bs=4k", "--iodepth=8", "--ioengine=io_uring", f"--size={size}"]
    return fio_jobs(common, [[f"--filename={p}"] for p in paths], secs, extra)


def fio_mixed(path, size, secs, extra=()):
    common = ["--direct=1", "--rw=randrw", "--rwmixread=80", f"--bssplit={FILE_SERVER_BSSPLIT}",
              "--iodepth=16", "--ioengine=io_uring", f"--size={size}"]
    return fio_jobs(common, [[f"--filename={path}"]], secs, extra)


def variant_cmd(exe, variant):
    """The start of an iotoll command line for a variant: (env assignments,
    extra arguments) as `--variant` parsed them."""
    env, args = variant
    return (["env", *env] if env else []) + [exe], list(args)


def iotoll_case(exe, path, bs, qd, engine, secs, variant=((), ())):
    pre, extra = variant_cmd(exe, variant)
    cmd = [
        *pre, "disk", "run", *extra, "--target", path, "--bs", bs, "--read", "100", "--random", "100",
        "--qd", str(qd), "--engine", engine, "--align", bs, "--ramp", "0s", "--time", f"{secs}s", "--json", "--quiet", "--no-db",
    ]
    return iotoll_run(cmd)


def iotoll_multi(exe, paths, secs, variant=((), ())):
    pre, extra = variant_cmd(exe, variant)
    cmd = [*pre, "disk", "run", *extra]
    for p in paths:
        cmd += ["--target", p]
    cmd += ["--workers", "1", "--qd", "8", "--bs", "4k", "--read", "100", "--random", "100",
            "--engine", "io_uring", "--align", "4k", "--ramp", "0s", "--time", f"{secs}s", "--json", "--quiet", "--no-db"]
    return iotoll_run(cmd)


def iotoll_mixed(exe, path, secs, variant=((), ())):
    # 20 % writes: the file is ours, hence --allow-destructive. Alignment 512
    # is fio's with this bssplit (blockalign defaults to the smallest size).
    pre, extra = variant_cmd(exe, variant)
    cmd = [*pre, "disk", "run", *extra, "--target", path, "--spec", "iometer-file-server", "--qd", "16", "--engine", "io_uring",
           "--align", "512", "--allow-destructive", "--ramp", "0s", "--time", f"{secs}s", "--json", "--quiet", "--no-db"]
    return iotoll_run(cmd)


class Statx(ctypes.Structure):
    _fields_ = [("mask", ctypes.c_uint32), ("blksize", ctypes.c_uint32), ("attributes", ctypes.c_uint64),
                ("nlink", ctypes.c_uint32), ("uid", ctypes.c_uint32), ("gid", ctypes.c_uint32),
                ("mode", ctypes.c_uint16), ("_pad0", ctypes.c_uint16), ("ino", ctypes.c_uint64),
                ("size", ctypes.c_uint64), ("blocks", ctypes.c_uint64), ("attributes_mask", ctypes.c_uint64),
                ("times", ctypes.c_uint8 * 64), ("rdev_major", ctypes.c_uint32), ("rdev_minor", ctypes.c_uint32),
                ("dev_major", ctypes.c_uint32), ("dev_minor", ctypes.c_uint32), ("mnt_id", ctypes.c_uint64),
                ("dio_mem_align", ctypes.c_uint32), ("dio_offset_align", ctypes.c_uint32),
                ("_spare", ctypes.c_uint8 * 96)]


def dio_alignment(path):
    """(offset alignment, memory alignment, how found) for O_DIRECT on path:
    statx(STATX_DIOALIGN) where the kernel and file system give it, else a
    probe (a 512-byte O_DIRECT read at offset 512 into a 512-aligned buffer)."""
    STATX_DIOALIGN = 0x2000
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
        st = Statx()
        if libc.statx(-100, path.encode(), 0, STATX_DIOALIGN, ctypes.byref(st)) == 0 \
                and st.mask & STATX_DIOALIGN and st.dio_offset_align:
            return st.dio_offset_align, st.dio_mem_align, "statx"
    except (AttributeError, OSError):
        pass
    import mmap
    fd = os.open(path, os.O_RDONLY | os.O_DIRECT)
    try:
        buf = mmap.mmap(-1, 8192)
        os.preadv(fd, [memoryview(buf)[512:1024]], 512)
        return 512, 512, "probe"
    except OSError:
        return 4096, 4096, "probe (512 failed)"
    finally:
        os.close(fd)


def rss_check(exe, path, secs):
    """Max RSS of 4 workers x QD 256 x 64k (buffers: 64 MiB)."""
    cmd = [exe, "disk", "run", "--target", path, "--bs", "64k", "--read", "100", "--random", "100",
           "--qd", "256", "--workers", "4", "--ramp", "0s", "--time", f"{secs}s", "--json", "--quiet", "--no-db"]
    return max_rss_kib(cmd)


def create(exe, path, size):
    """Lays out a test file once with iotoll (non-repeating data)."""
    if not os.path.exists(path):
        subprocess.run([exe, "disk", "run", "--target", path, "--create", "--keep", "--size", size,
                        "--time", "1s", "--ramp", "0s", "--quiet", "--json", "--no-db"], check=True, stdout=subprocess.DEVNULL)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iotoll", required=True)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--time", type=int, default=10, help="seconds per run")
    ap.add_argument("--dir", default="target/bench", help="where the test files go")
    ap.add_argument("--size", default="1g", help="size of each test file")
    ap.add_argument("--cases", default="qd32,qd1,rss,multi,mixed",
                    help="comma list of qd32, qd1, rss, multi, mixed")
    ap.add_argument("--variant", action="append", default=[], metavar="NAME:TOKENS",
                    help="also run iotoll as NAME in the io_uring cases, side by side with the default;"
                         " TOKENS (space-separated) are environment assignments (UPPER=value) and extra"
                         " iotoll arguments, e.g. 'sqpoll:--sqpoll'. Repeatable.")
    ap.add_argument("--pause-unless", metavar="FILE",
                    help="before each run, wait while FILE does not exist (a shared machine's 'quiet' flag)")
    a = ap.parse_args()
    variants = {}
    for v in a.variant:
        name, _, toks = v.partition(":")
        toks = toks.split()
        env = tuple(t for t in toks if "=" in t and t.split("=")[0].isupper())
        variants["iotoll-" + name] = (env, tuple(t for t in toks if t not in env))
    wanted = a.cases.split(",")
    os.makedirs(a.dir, exist_ok=True)
    path = os.path.join(a.dir, "disk-vs-fio.tst")
    multi_paths = [os.path.join(a.dir, f"disk-vs-fio-multi{i}.tst") for i in range(1, 5)]
    mixed_path = os.path.join(a.dir, "disk-vs-fio-mixed.tst")
    if any(c in wanted for c in ("qd32", "qd1", "rss")):
        create(a.iotoll, path, a.size)
    if "multi" in wanted:
        for p in multi_paths:
            create(a.iotoll, p, a.size)
    if "mixed" in wanted:
        create(a.iotoll, mixed_path, a.size)
    sizes = {p: os.path.getsize(p) for p in [path, mixed_path] + multi_paths if os.path.exists(p)}
    size = sizes.get(path, 0)
    print(machine_line())
    fio_ver = subprocess.run(["fio", "--version"], capture_output=True, text=True).stdout.strip()
    print(f"files: {a.dir} (" + ", ".join(f"{os.path.basename(p)} {n >> 20} MiB" for p, n in sizes.items()) + ")"
          f"\nfio {fio_ver}  {a.rounds} rounds x {a.time} s, alternating\n")

    # io_uring: fio registers the file and the buffers as iotoll does
    # (--registerfiles --fixedbufs), in two modes. "fio-each" is fio's
    # default, one io_uring_enter per I/O, which is how iotoll submits since
    # issue 27 §1. "fio" batches: every free slot refilled, then one
    # io_uring_enter that submits them all and waits for a completion
    # (iodepth_batch_submit=QD: fio commits what is queued before it waits;
    # iodepth_batch_complete_min=1), iotoll's way before. Each iotoll run is
    # reported against both and against the better of them.
    def uring_fio(qd):
        base = ["--registerfiles", "--fixedbufs"]
        return [("fio", base + [f"--iodepth_batch_submit={qd}", "--iodepth_batch_complete_min=1",
                                f"--iodepth_batch_complete_max={qd}"]),
                ("fio-each", base)]

    def single(bs, qd, fio_engine, engine):
        return (lambda extra: fio_case(path, size, bs, qd, fio_engine, a.time, extra),
                lambda v=((), ()): iotoll_case(a.iotoll, path, bs, qd, engine, a.time, v))

    cases = {
        "qd32": ("4k randread QD32 io_uring",) + single("4k", 32, "io_uring", "io_uring") + (uring_fio(32),),
        "qd1": ("4k randread QD1 psync",) + single("4k", 1, "psync", "psync") + ([("fio", [])],),
        "multi": ("4 files x 1 worker, 4k randread QD8 each, io_uring",
                  lambda extra: fio_multi(multi_paths, sizes.get(multi_paths[0]), a.time, extra),
                  lambda v=((), ()): iotoll_multi(a.iotoll, multi_paths, a.time, v), uring_fio(8)),
        "mixed": ("Iometer File Server (512B-64k, 80 % read, random) QD16 io_uring",
                  lambda extra: fio_mixed(mixed_path, sizes.get(mixed_path), a.time, extra),
                  lambda v=((), ()): iotoll_mixed(a.iotoll, mixed_path, a.time, v), uring_fio(16)),
    }
    if "mixed" in wanted:
        off, mem, how = dio_alignment(mixed_path)
        print(f"O_DIRECT alignment of {mixed_path}: offset {off}, memory {mem} ({how})")
        if off > 512:
            print(f"   the File Server spec's 512-byte I/Os need offset alignment 512; this file system wants {off}."
                  " Skipping 'mixed': give --dir on a file system that allows 512 (e.g. ext4 on a loop device"
                  " with 512-byte sectors).\n")
            wanted = [c for c in wanted if c != "mixed"]
        else:
            print()
    for cname in (c for c in wanted if c in cases):
        name, fio_run, iotoll_run_, fios = cases[cname]
        fio_tools = [t for t, _ in fios]
        # Variants only where the engine is io_uring (psync has no modes).
        mine = ["iotoll"] + (list(variants) if "io_uring" in name else [])
        tools = fio_tools + mine
        fio_args = dict(fios)
        res = {t: [] for t in tools}
        for r in range(a.rounds):
            # Rotate the order every round.
            order = rotation(tools, r)
            for tool in order:
                wait_for(a.pause_unless)
                if tool == "iotoll":
                    res[tool].append(iotoll_run_())
                elif tool in variants:
                    res[tool].append(iotoll_run_(variants[tool]))
                else:
                    res[tool].append(fio_run(fio_args[tool]))
                x = res[tool][-1]
                print(f"  round {r + 1} {tool:<14} {x['iops']:>10.0f} IOPS  {x['cpu_us_per_io']:7.2f} us CPU/IO  {x['proc_us_per_io']:6.2f} own"
                      f"  lat {x['lat_mean_us']:8.1f} us  qd_achieved {x['qd_achieved']:5.2f}", file=sys.stderr)
        keys = ("iops", "cpu_us_per_io", "proc_us_per_io", "lat_mean_us", "qd_achieved")
        med = {t: {k: statistics.median(x[k] for x in v) for k in keys} for t, v in res.items()}
        inwin = statistics.median(x["in_window_cpu_us_per_io"] for x in res["iotoll"])
        little = statistics.median(x["qd_little"] for x in res["iotoll"])
        print(f"== {name}")
        w = max(len(t) for t in tools) + 2
        print(f"   {'':{w}}{'median IOPS':>14}{'CPU us/IO (host)':>20}{'(own)':>8}{'lat mean us':>14}{'qd_achieved':>14}")
        for t in tools:
            print(f"   {t:<{w}}{med[t]['iops']:>14.0f}{med[t]['cpu_us_per_io']:>20.2f}{med[t]['proc_us_per_io']:>8.2f}"
                  f"{med[t]['lat_mean_us']:>14.1f}{med[t]['qd_achieved']:>14.2f}")
        # Each iotoll run against every fio mode, and against the best of
        # them (the highest median IOPS): the bar is the peer in
        # its best mode, not only the like-for-like one.
        best = max(fio_tools, key=lambda t: med[t]["iops"])
        for m in mine:
            for t in fio_tools + (["best"] if len(fio_tools) > 1 else []):
                f = best if t == "best" else t
                label = f"best fio ({f})" if t == "best" else t
                print(f"   ratio {m}/{label}: IOPS {med[m]['iops'] / med[f]['iops']:.3f}   "
                      f"CPU per I/O {med[m]['cpu_us_per_io'] / med[f]['cpu_us_per_io']:.3f}"
                      f" (own {med[m]['proc_us_per_io'] / med[f]['proc_us_per_io']:.3f})   "
                      f"lat mean {med[m]['lat_mean_us'] / med[f]['lat_mean_us']:.3f}")
        print(f"   (qd_achieved: iotoll measured directly; fio = fio IOPS x fio mean lat"
              f"{'; both per worker (fio job)' if cname == 'multi' else ''}. iotoll's IOPS x mean lat, median: {little:.2f})")
        if "qd_clat" in res[tools[0]][0]:
            clat = {t: statistics.median(x["qd_clat"] for x in res[t]) for t in fio_tools}
            print("   (fio IOPS x mean clat, median: " + ", ".join(f"{t} {v:.2f}" for t, v in clat.items()) + ")")
        print(f"   (iotoll's own in-window cpu_us_per_io, median: {inwin:.2f})")
        if cname == "multi":
            multi_sanity(res, tools)
        if cname == "mixed":
            mixed_lines(res, tools)
        print()

    if "rss" not in wanted:
        return
    rss = rss_check(a.iotoll, path, min(a.time, 5))
    print(f"== RSS, 4 workers x QD 256 x 64k: {rss / 1024:.1f} MiB max RSS (I/O buffers: 64.0 MiB)")


def wait_for(path):
    """Waits while `path` (if given) does not exist, polling every 30 s."""
    if path and not os.path.exists(path):
        print(f"  (paused: {path} is absent)", file=sys.stderr)
        while not os.path.exists(path):
            time.sleep(30)


def multi_sanity(res, tools):
    """Do the per-target figures add up to the totals, and are the targets
    even? iotoll: its breakdown (targets and workers) against metrics.iops
    and its I/O count; fio: per-job IOPS (one job per file) against the
    group total."""
    for t in tools:
        rows = res[t]
        if not all("per_target_iops" in x for x in rows):
            print(f"   sanity {t}: no per-target figures (iotoll JSON has no targets)")
            continue
        dev = [sum(x["per_target_iops"]) / x["iops"] - 1 for x in rows]
        ntg = {len(x["per_target_iops"]) for x in rows}
        per = [statistics.median(x["per_target_iops"][i] for x in rows) for i in range(max(ntg))]
        line = (f"   sanity {t}: targets {'/'.join(map(str, sorted(ntg)))}, sum of per-target IOPS / total"
                f" {1 + min(dev):.4f}..{1 + max(dev):.4f}")
        if t == "iotoll":
            iod = [x["per_target_ios"] / x["ios"] - 1 for x in rows if "ios" in x]
            if iod:
                line += f", per-target I/Os / total I/Os {1 + min(iod):.4f}..{1 + max(iod):.4f}"
            if all("per_worker_iops" in x for x in rows):
                nw = {len(x["per_worker_iops"]) for x in rows}
                wd = [sum(x["per_worker_iops"]) / x["iops"] - 1 for x in rows]
                line += (f"; workers {'/'.join(map(str, sorted(nw)))}, sum of per-worker IOPS / total"
                         f" {1 + min(wd):.4f}..{1 + max(wd):.4f}")
        ok = all(abs(d) < 0.005 for d in dev)
        print(line + ("  OK" if ok else "  MISMATCH (> 0.5 %)"))
        print("      median per-target IOPS: " + ", ".join(f"{v:.0f}" for v in per))


def mixed_lines(res, tools):
    """iotoll's per-line I/O shares against the spec's; every tool's read share."""
    rows = res["iotoll"]
    if all("lines" in x for x in rows):
        n = len(rows[0]["lines"])
        got = [statistics.median(x["lines"][i][2] for x in rows) for i in range(n)]
        print("   iotoll lines (size: asked % -> done %, median): " + ", ".join(
            f"{bs // 1024 if bs >= 1024 else bs}{'k' if bs >= 1024 else 'B'}: {share} -> {g:.1f}"
            for (bs, share, _), g in zip(rows[0]["lines"], got)))
    shares = []
    for t in tools:
        rp = [x["read_pct"] for x in res[t] if x.get("read_pct") is not None]
        if rp:
            shares.append(f"{t} {statistics.median(rp):.1f}")
    print("   reads, % of I/Os (asked 80), median: " + ", ".join(shares))


if __name__ == "__main__":
    main()
