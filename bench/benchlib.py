"""Helpers shared by the bench/ scripts (disk_vs_fio.py, net_vs_peers.py,
iscsi_vs_libiscsi.py): whole-host busy CPU from /proc/stat, running a tool
under that measurement, reading iotoll's --json, peak RSS, alternating the
tools' order, medians and iotoll/peer ratios."""
import json
import os
import platform
import resource
import socket
import statistics
import subprocess
import sys
import tempfile
import time

CLK_TCK = os.sysconf("SC_CLK_TCK")


def host_busy_ticks():
    """Busy ticks of the whole host (all CPUs) since boot: everything in the
    first line of /proc/stat but idle and iowait."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:9]]
    user, nice, system, idle, iowait, irq, softirq, steal = v
    return user + nice + system + irq + softirq + steal


def host_busy_s():
    """host_busy_ticks() in CPU seconds."""
    return host_busy_ticks() / CLK_TCK


def tree_cpu_s(pid):
    """CPU seconds (user + system) of process pid and its live descendants.
    /proc/PID/stat's times are the kernel's tick samples scaled to the
    scheduler's exact runtime, so a process that runs in short bursts
    between ticks is counted, unlike in /proc/stat's per-CPU ticks."""
    parent, own = {}, {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            f = open(f"/proc/{d}/stat").read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parent[int(d)] = int(f[1])
        own[int(d)] = (int(f[11]) + int(f[12])) / CLK_TCK
    tree, todo = set(), [pid]
    while todo:
        p = todo.pop()
        if p in tree:
            continue
        tree.add(p)
        todo += [c for c, pp in parent.items() if pp == p]
    return sum(own.get(p, 0.0) for p in tree)


def children_cpu_s():
    """CPU seconds of the children this process has waited for (and their
    waited-for descendants): exact, as tree_cpu_s."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def stop(p):
    """Ends the child process p by its PID: SIGTERM, then SIGKILL after 5 s."""
    if p.poll() is None:
        p.terminate()
        try:
            p.wait(timeout=5)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def free_port():
    """A loopback TCP port nothing listens on (bound to port 0, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def machine_line():
    cpu = open("/proc/cpuinfo").read().split("model name")[1].split("\n")[0].strip(": \t")
    return f"machine: {platform.node()}  {os.cpu_count()} CPUs  {cpu}  kernel {platform.release()}"


def children_cpu_s():
    """User + system CPU seconds of this process's waited-for children."""
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def run(cmd):
    """Runs cmd; returns (stdout, busy host CPU seconds, wall s, own CPU
    seconds): host CPU from /proc/stat over the whole run; own CPU the
    process's user + system time, which other load on a busy machine does
    not inflate (though it misses kernel work charged to other tasks).
    Exits on failure."""
    c0 = children_cpu_s()
    b0, t0 = host_busy_ticks(), time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = p.communicate()
    t1, b1 = time.monotonic(), host_busy_ticks()
    own_s = children_cpu_s() - c0
    ru = p.returncode
    if ru != 0:
        sys.exit(f"command failed ({ru}): {' '.join(cmd)}\n{err.decode()}")
    return out, (b1 - b0) / CLK_TCK, t1 - t0, own_s


def max_rss_kib(cmd, on_start=None):
    """Runs cmd (output discarded); its peak RSS in KiB, as GNU time's %M
    reports it. Not wait4's ru_maxrss of a child of this script: the kernel
    carries the RSS of the image a process had before its exec into that
    figure, so a command started from Python reports at least Python's own
    RSS (about 17 MiB here) however little it used; GNU time's child starts
    from GNU time's 2 MiB. on_start(pid), if given, is called once the
    command started, with its own pid (e.g. to sample /proc/PID). Exits on
    failure."""
    if not os.access("/usr/bin/time", os.X_OK):
        sys.exit("the RSS case needs GNU time: apt-get install time")
    with tempfile.NamedTemporaryFile("r", prefix="iotoll-bench-rss-") as out:
        p = subprocess.Popen(["/usr/bin/time", "-f", "%M", "-o", out.name] + cmd,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        if on_start:
            kids = f"/proc/{p.pid}/task/{p.pid}/children"
            until = time.monotonic() + 5
            pid = None
            while pid is None and p.poll() is None and time.monotonic() < until:
                try:
                    with open(kids) as f:
                        pid = int(f.read().split()[0])
                except (OSError, ValueError, IndexError):
                    time.sleep(0.01)
            if pid is not None:
                on_start(pid)
        err = p.stderr.read().decode()
        if p.wait() != 0:
            sys.exit(f"command failed ({p.returncode}): {' '.join(cmd)}\n" + err)
        return int(out.read().split()[-1])


def iotoll_result(d, cpu_s, wall, own_s):
    """The figures the benchmarks compare, from an iotoll --json document d,
    the whole-host busy CPU seconds cpu_s measured over its whole run and
    its own CPU seconds own_s."""
    m = d["metrics"]
    ios = m["iops"] * m["window_s"]
    x = {
        "iops": m["iops"],
        "cpu_us_per_io": cpu_s * 1e6 / ios,
        "in_window_cpu_us_per_io": m.get("cpu_us_per_io"),
        "proc_us_per_io": own_s * 1e6 / ios,
        # Measured directly (integral of the in-flight count), and by
        # Little's law from iotoll's IOPS and mean latency.
        "qd_achieved": m["qd_achieved"],
        "qd_little": m["iops"] * m["lat_mean_us"] / 1e6,
        "lat_mean_us": m["lat_mean_us"],
        "wall": wall,
    }
    # Per-target, per-worker and per-line figures (docs/json.md).
    tg, wk = d.get("targets") or [], d.get("workers") or []

    def count(e):
        return e["counts"]["reads"] + e["counts"]["writes"]
    if tg:
        x["per_target_iops"] = [t["metrics"]["iops"] for t in tg]
        x["per_target_ios"] = sum(count(t) for t in tg)
        x["ios"] = d["latency"]["count"]
    if wk:
        x["per_worker_iops"] = [w["metrics"]["iops"] for w in wk]
        # metrics.qd_achieved is the run's total in flight; per worker, as
        # fio's figure (one job per worker) is printed.
        x["qd_achieved"] /= len(wk)
        x["qd_little"] /= len(wk)
    if d.get("lines"):
        x["lines"] = [(ln["bs"], ln["share_pct"], ln["ios_pct"]) for ln in d["lines"]]
    x["read_pct"] = 100 * m["read_iops"] / m["iops"] if m.get("iops") else None
    return x


def iotoll_run(cmd):
    """Runs an `iotoll ... --json` command line; iotoll_result of it."""
    out, cpu_s, wall, own_s = run(cmd)
    return iotoll_result(json.loads(out), cpu_s, wall, own_s)


def rotation(tools, r):
    """The order of the tools in round r (0-based): rotated by one every round."""
    k = r % len(tools)
    return tools[k:] + tools[:k]


def median(xs):
    return statistics.median(xs)


def report(title, res, keys, failed=None, out=sys.stdout):
    """Prints a table of medians (one row per tool of res, {tool: [rows]};
    one column per (key, label) of keys) and the ratios of the first tool
    to each other one. failed: {tool: rounds without a figure}. Returns
    {tool: {key: median}}."""
    failed = failed or {}
    print(f"== {title}", file=out)
    tools = list(res)
    print("   " + f"{'':10}" + "".join(f"{k:>22}" for k, _ in keys), file=out)
    med = {}
    for t in tools:
        if not res[t]:
            sys.exit(f"   {t}: no round produced a result")
        med[t] = {k: median([r[k] for r in res[t]]) for k, _ in keys}
        print("   " + f"{t:<10}" + "".join(f"{med[t][k]:>22.2f}" for k, _ in keys)
              + (f"   ({len(res[t])} rounds; {failed[t]} failed)" if failed.get(t) else ""), file=out)
    a = tools[0]
    for b in tools[1:]:
        ratios = [f"{label} {med[a][k] / med[b][k]:.3f}" for k, label in keys if med[b][k]]
        print(f"   ratio {a}/{b}: " + "   ".join(ratios), file=out)
    return med
