#!/usr/bin/env python3
"""iotoll's iSCSI initiator vs libiscsi's iscsi-perf, alternating, against
one private tgtd. See iscsi-vs-libiscsi.sh.

The target: a tgtd of our own on 127.0.0.1 (a free port, a control port
nobody uses), target 1 with LUN 1 on tgt's null backing store (1 TiB, no
data) and LUN 2 on a file in tmpfs (rdwr backing store). Killed by pid
(SIGKILL: tgtd ignores SIGTERM) at the end, on errors and on Ctrl-C/SIGTERM/
SIGHUP, and its /var/run/tgtd/socket.N files removed.

Cases: 4k random read QD 32 and 64k sequential read QD 8, each on both LUNs
(iscsi-perf reads only). Per case, --reps rounds, the tools' order swapped
every round.

- iotoll: `disk run --target iscsi://... --ramp 1s --time T`; IOPS and CPU
  per I/O from its JSON: metrics.cpu_us_per_io, the whole host's busy CPU
  over its measurement window (after the ramp) per I/O completed in it.
  The script recomputes it from cpu.local (busy_pct x cpus x window_s /
  latency.count) as a check.
- iscsi-perf: `-m QD -b BLOCKS -t T [-r] -l URL`; IOPS is its own final
  "iops average" (all I/Os from its first submission to its end: it has no
  ramp). CPU per I/O: whole-host busy CPU from /proc/stat between 1 s after
  it was started (login included, as iotoll's ramp) and 0.2 s before its
  expected end, divided by (its IOPS x that window).
  The two windows differ slightly; the target's CPU (tgtd, same host) is in
  both, as is everything else running on the host.
- RSS: iotoll, 4k random read QD 32, --workers 4 (one session each), on the
  null LUN: peak RSS (GNU time %M: see benchlib.max_rss_kib) against "I/O buffers
  (4 x 32 x 4 KiB) + at most 8 MiB".
"""
import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time

from benchlib import CLK_TCK, free_port, host_busy_ticks, machine_line, max_rss_kib, median, report, rotation, run

IQN = "iqn.2026-11.bench.iotoll:t1"
IPC_DIR = "/var/run/tgtd"
NULL_LUN, TMPFS_LUN = 1, 2

# name: (title, bs, qd, random, lun)
CASES = {
    "4k-null": ("4k random read QD32, null LUN", "4k", 32, True, NULL_LUN),
    "4k-tmpfs": ("4k random read QD32, tmpfs LUN", "4k", 32, True, TMPFS_LUN),
    "64k-null": ("64k sequential read QD8, null LUN", "64k", 8, False, NULL_LUN),
    "64k-tmpfs": ("64k sequential read QD8, tmpfs LUN", "64k", 8, False, TMPFS_LUN),
}
RSS_WORKERS, RSS_QD, RSS_BS = 4, 32, 4096
RSS_ALLOWANCE_KIB = 8 * 1024


def inode(path):
    try:
        return os.stat(path).st_ino
    except OSError:
        return None


class Tgtd:
    """A private tgtd: -C N (N < 32768, its socket.N not there before),
    portal 127.0.0.1:PORT. stop() kills it by pid and removes socket.N and
    socket.N.lock if they are still the files ours made."""

    def __init__(self):
        self.proc = None
        self.files = []
        for attempt in range(20):
            ctl = 1024 + (os.getpid() * 7 + attempt * 131) % (32767 - 1024)
            if os.path.exists(f"{IPC_DIR}/socket.{ctl}") or os.path.exists(f"{IPC_DIR}/socket.{ctl}.lock"):
                continue
            self.ctl, self.port = ctl, free_port()
            if self._start():
                return
        sys.exit("tgtd did not start after 20 attempts")

    def _start(self):
        self.log = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(["tgtd", "-f", "-C", str(self.ctl), "--iscsi", f"portal=127.0.0.1:{self.port}"],
                                     stdin=subprocess.DEVNULL, stdout=self.log, stderr=subprocess.STDOUT)
        want = f"Portal: 127.0.0.1:{self.port},"
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                log = self.log_text()
                if "another tgtd is using" in log or "unable to bind" in log:
                    self.proc = None
                    return False
                sys.exit(f"tgtd exited ({self.proc.returncode}):\n{log}")
            r = subprocess.run(self.adm_args("--op", "show", "--mode", "portal"), capture_output=True, text=True)
            if r.returncode == 0:
                if "unable to bind" in self.log_text():
                    # It fell back to *:3260: not ours to use; try another port.
                    self.remember_files()
                    self.stop()
                    return False
                if any(ln.strip().startswith(want) for ln in r.stdout.splitlines()):
                    self.remember_files()
                    return True
            time.sleep(0.05)
        self.stop()
        sys.exit(f"tgtd -C {self.ctl} not ready on 127.0.0.1:{self.port} in 10 s:\n{self.log_text()}")

    def log_text(self):
        self.log.seek(0)
        return self.log.read().decode(errors="replace")

    def remember_files(self):
        self.files = [(p, inode(p)) for p in (f"{IPC_DIR}/socket.{self.ctl}", f"{IPC_DIR}/socket.{self.ctl}.lock")]

    def adm_args(self, *args):
        return ["tgtadm", "-C", str(self.ctl), "--lld", "iscsi", *args]

    def adm(self, *args):
        r = subprocess.run(self.adm_args(*args), capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit(f"tgtadm {' '.join(args)} failed: {r.stderr.strip()}")
        return r.stdout

    def sessions(self):
        out = self.adm("--op", "show", "--mode", "conn", "--tid", "1")
        return sum(1 for ln in out.splitlines() if ln.strip().startswith("Session:"))

    def stop(self):
        if self.proc is not None:
            try:
                os.kill(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait()
            self.proc = None
        for p, ino in self.files:
            if ino is not None and inode(p) == ino:
                os.unlink(p)
        self.files = []

    def url(self, lun):
        return f"iscsi://127.0.0.1:{self.port}/{IQN}/{lun}"


def iotoll_case(exe, url, bs, qd, random, secs):
    cmd = [exe, "disk", "run", "--target", url, "--bs", bs, "--read", "100", "--random", "100" if random else "0",
           "--qd", str(qd), "--time", f"{secs}s", "--ramp", "1s", "--json", "--no-db", "--quiet"]
    out, _, wall, _ = run(cmd)
    d = json.loads(out)
    if d.get("status") != "complete":
        sys.exit(f"iotoll run {d.get('status')}: {d.get('notes')}")
    m, c = d["metrics"], d["cpu"]["local"]
    ios = d["latency"]["count"]
    mine = c["busy_pct"] / 100 * c["cpus"] * c["window_s"] * 1e6 / ios
    return {
        "iops": m["iops"],
        "cpu_us_per_io": m["cpu_us_per_io"],
        # The same formula on the JSON's cpu.local and I/O count.
        "cpu_us_per_io_check": mine,
        "window_s": c["window_s"],
        "lat_mean_us": m["lat_mean_us"],
        "qd_achieved": m["qd_achieved"],
        "wall": wall,
    }


AVG_RE = re.compile(r"iops average (\d+) \((\d+) MB/s\)")


def perf_case(url, bs, qd, random, secs):
    blocks = {"4k": 8, "64k": 128}[bs]
    cmd = ["iscsi-perf", "-m", str(qd), "-b", str(blocks), "-t", str(secs), *(["-r"] if random else []), "-l", url]
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    # Read its pipes while we sample, so it never blocks on them.
    outs = {}
    readers = [threading.Thread(target=lambda f=f, k=k: outs.__setitem__(k, f.read())) for k, f in
               (("out", p.stdout), ("err", p.stderr))]
    for t in readers:
        t.start()
    w0, w1 = t0 + 1.0, t0 + secs - 0.2
    time.sleep(max(0.0, w0 - time.monotonic()))
    b0, s0 = host_busy_ticks(), time.monotonic()
    time.sleep(max(0.0, w1 - time.monotonic()))
    b1, s1 = host_busy_ticks(), time.monotonic()
    early = p.poll() is not None
    p.wait()
    wall = time.monotonic() - t0
    for t in readers:
        t.join()
    out = outs["out"].decode(errors="replace")
    if p.returncode != 0 or early:
        sys.exit(f"iscsi-perf {'ended before the CPU window closed' if early else f'failed ({p.returncode})'}: "
                 f"{' '.join(cmd)}\n{out[-2000:]}\n{outs['err'].decode(errors='replace')[-2000:]}")
    avgs = AVG_RE.findall(out)
    if not avgs:
        sys.exit(f"no 'iops average' in iscsi-perf's output:\n{out[-2000:]}")
    iops = int(avgs[-1][0])
    win = s1 - s0
    return {
        "iops": iops,
        "cpu_us_per_io": (b1 - b0) / CLK_TCK * 1e6 / (iops * win),
        "window_s": win,
        "wall": wall,
    }


def rss_case(exe, tgt, secs):
    cmd = [exe, "disk", "run", "--target", tgt.url(NULL_LUN), "--bs", "4k", "--read", "100", "--random", "100",
           "--qd", str(RSS_QD), "--workers", str(RSS_WORKERS), "--time", f"{secs}s", "--ramp", "1s",
           "--json", "--no-db", "--quiet"]
    seen, status, hwm = [], {}, []
    t0 = time.monotonic()

    def sample(pid):
        # Sessions on the target, and the RSS breakdown at its peak
        # (anonymous: heap, stacks, buffers; file: the mapped binary and
        # libraries), from /proc/PID/status every 0.2 s.
        t_sessions = time.monotonic() + min(2.0, secs / 2 + 0.5)
        while True:
            try:
                with open(f"/proc/{pid}/status") as f:
                    st = {k: int(v.split()[0]) for k, v in (ln.split(":", 1) for ln in f)
                          if k in ("VmRSS", "VmHWM", "RssAnon", "RssFile", "RssShmem")}
            except (OSError, ValueError):
                return
            if st.get("VmRSS", 0) >= status.get("VmRSS", 0):
                status.update(st)
            if "VmHWM" in st and (not hwm or st["VmHWM"] > hwm[-1][1]):
                hwm.append((round(time.monotonic() - t0, 1), st["VmHWM"]))
            if not seen and time.monotonic() >= t_sessions:
                seen.append(tgt.sessions())
            time.sleep(0.2)

    def on_start(pid):
        t = threading.Thread(target=sample, args=(pid,), daemon=True)
        t.start()
        threads.append(t)
    threads = []
    rss = max_rss_kib(cmd, on_start)
    for t in threads:
        t.join()
    buffers = RSS_WORKERS * RSS_QD * RSS_BS // 1024
    return {"max_rss_kib": rss, "buffers_kib": buffers, "rss_minus_buffers_kib": rss - buffers,
            "allowance_kib": RSS_ALLOWANCE_KIB, "ok": rss - buffers <= RSS_ALLOWANCE_KIB,
            "sessions_seen": seen[0] if seen else None, "workers": RSS_WORKERS,
            "at_peak_kib": {k: status.get(k) for k in ("RssAnon", "RssFile", "RssShmem")},
            "vmhwm_kib_by_t_s": hwm, "rss_time_s": secs, "rss_ramp_s": 1}


def make_lun_file(path, size):
    """A tmpfs file of size bytes, written (zeros) so that every page exists."""
    chunk = b"\0" * (1 << 20)
    with open(path, "wb") as f:
        for _ in range(size >> 20):
            f.write(chunk)
        f.truncate(size)


def parse_size(s):
    m = re.fullmatch(r"(\d+)([kmgt]?)i?b?", s.lower())
    if not m:
        sys.exit(f"bad size {s!r}")
    return int(m.group(1)) << (10 * " kmgt".index(m.group(2) or " "))


def on_signal(signum, _frame):
    raise SystemExit(128 + signum)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iotoll", required=True)
    ap.add_argument("--baseline", metavar="BIN",
                    help="another iotoll build run in the same rotation (reported as iotoll-base), e.g. the build before a change")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--time", type=int, default=10, help="seconds per run (at least 2)")
    ap.add_argument("--cases", default=",".join(CASES) + ",rss", help="comma list of " + ", ".join(CASES) + ", rss")
    ap.add_argument("--tmpfs-dir", default="/dev/shm", help="where the tmpfs LUN's file goes")
    ap.add_argument("--lun-size", default="1g", help="size of the tmpfs LUN")
    ap.add_argument("--json", action="store_true",
                    help="print a JSON summary on stdout (the human-readable report then goes to stderr)")
    a = ap.parse_args()
    if a.time < 2:
        sys.exit("--time must be at least 2 (iscsi-perf's CPU window is 1 s .. T-0.2 s)")
    wanted = a.cases.split(",")
    unknown = [c for c in wanted if c not in CASES and c != "rss"]
    if unknown:
        sys.exit(f"unknown cases: {', '.join(unknown)}")
    out = sys.stderr if a.json else sys.stdout

    def say(*x):
        print(*x, file=out, flush=True)

    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, on_signal)
    tgt, lun_path = None, None
    summary = {"machine": machine_line().removeprefix("machine: "), "reps": a.reps, "time_s": a.time, "cases": {}}
    try:
        tgt = Tgtd()
        tgt.adm("--op", "new", "--mode", "target", "--tid", "1", "-T", IQN)
        tgt.adm("--op", "new", "--mode", "logicalunit", "--tid", "1", "--lun", str(NULL_LUN),
                "--bstype", "null", "--backing-store", "/dev/null")
        if any(CASES[c][4] == TMPFS_LUN for c in wanted if c in CASES):
            lun_path = os.path.join(a.tmpfs_dir, f"iotoll-bench-lun-{os.getpid()}.img")
            make_lun_file(lun_path, parse_size(a.lun_size))
            tgt.adm("--op", "new", "--mode", "logicalunit", "--tid", "1", "--lun", str(TMPFS_LUN),
                    "--bstype", "rdwr", "--backing-store", lun_path)
        tgt.adm("--op", "bind", "--mode", "target", "--tid", "1", "-I", "ALL")
        tgtd_ver = subprocess.run(["tgtd", "-V"], capture_output=True, text=True).stdout.strip()
        pr = subprocess.run(["iscsi-perf"], capture_output=True, text=True)
        perf_ver = re.search(r"iscsi-perf version \S+", pr.stdout + pr.stderr)
        say(machine_line())
        say(f"tgtd {tgtd_ver} (pid {tgt.proc.pid}, -C {tgt.ctl}) on 127.0.0.1:{tgt.port}: LUN {NULL_LUN} null (1 TiB),"
            + (f" LUN {TMPFS_LUN} rdwr on {lun_path} ({a.lun_size})" if lun_path else ""))
        say(f"iotoll vs {perf_ver.group(0) if perf_ver else 'iscsi-perf'}; {a.reps} reps x {a.time} s, alternating\n")
        summary.update(tgtd=tgtd_ver, iscsi_perf=perf_ver.group(0) if perf_ver else None)

        keys = [("iops", "IOPS"), ("cpu_us_per_io", "CPU us/IO")]
        for cname in (c for c in wanted if c in CASES):
            title, bs, qd, random, lun = CASES[cname]
            url = tgt.url(lun)
            tools = ["iotoll", "iscsi-perf"] + (["iotoll-base"] if a.baseline else [])
            res = {t: [] for t in tools}
            for r in range(a.reps):
                for tool in rotation(tools, r):
                    if tool == "iscsi-perf":
                        x = perf_case(url, bs, qd, random, a.time)
                    else:
                        exe = a.iotoll if tool == "iotoll" else a.baseline
                        x = iotoll_case(exe, url, bs, qd, random, a.time)
                    res[tool].append(x)
                    print(f"  {cname} rep {r + 1} {tool:<10} {x['iops']:>10.0f} IOPS  {x['cpu_us_per_io']:7.2f} us CPU/IO"
                          f"  (CPU window {x['window_s']:.2f} s)", file=sys.stderr, flush=True)
            med = report(title, res, keys, out=out)
            chk = median([x["cpu_us_per_io_check"] for x in res["iotoll"]])
            say(f"   (iotoll: cpu_us_per_io from its JSON, window after 1 s ramp; recomputed from cpu.local: {chk:.2f}."
                f" iscsi-perf: IOPS = its own average over its whole run, CPU over t = 1 s .. {a.time - 0.2:g} s"
                f" of it; qd_achieved iotoll {median([x['qd_achieved'] for x in res['iotoll']]):.2f})\n")
            summary["cases"][cname] = {
                "title": title, "bs": bs, "qd": qd, "random": random, "lun": lun,
                "median": med,
                "ratio_iotoll_over_iscsi_perf": {k: med["iotoll"][k] / med["iscsi-perf"][k] for k, _ in keys},
                "targets": {"iops": ">= 1.00", "cpu_us_per_io": "<= 1.00"},
                "reps": res,
            }

        if "rss" in wanted:
            x = rss_case(a.iotoll, tgt, min(a.time, 5))
            say(f"== RSS, iotoll 4k random read QD{RSS_QD} x {RSS_WORKERS} workers ({x['sessions_seen']} sessions seen"
                f" on the target), null LUN: max RSS {x['max_rss_kib'] / 1024:.1f} MiB; I/O buffers"
                f" {x['buffers_kib']} KiB; RSS - buffers {x['rss_minus_buffers_kib'] / 1024:.1f} MiB"
                f" (target <= {RSS_ALLOWANCE_KIB // 1024} MiB: {'OK' if x['ok'] else 'OVER'})")
            pk = x["at_peak_kib"]
            if pk.get("RssAnon") is not None:
                say(f"   at the highest RSS sampled (/proc/PID/status, every 0.2 s): anonymous {pk['RssAnon'] / 1024:.1f} MiB,"
                    f" file-backed (binary, libraries) {pk['RssFile'] / 1024:.1f} MiB, shmem {pk['RssShmem'] / 1024:.1f} MiB")
            say("   VmHWM as it grew (s since start: MiB): " + ", ".join(f"{t:g}: {k / 1024:.1f}" for t, k in x["vmhwm_kib_by_t_s"])
                + f"; run = 1 s ramp + {x['rss_time_s']} s")
            say()
            summary["rss"] = x
    finally:
        if tgt is not None:
            tgt.stop()
        if lun_path and os.path.exists(lun_path):
            os.unlink(lun_path)
    if a.json:
        json.dump(summary, sys.stdout, indent=2)
        print()


if __name__ == "__main__":
    main()
