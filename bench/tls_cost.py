#!/usr/bin/env python3
"""What TLS costs iotoll on loopback. See tls-cost.sh.

One endpoint (`iotoll net serve` on 127.0.0.1) runs for the whole benchmark.
Every round runs, in an order rotated by one each round: one stream
cleartext, one stream `--tls-cipher C` per cipher, and `openssl speed -evp C
-bytes 16384` per cipher (the cipher's ceiling on one core at TLS's largest
record size; run between the rounds so it sees the same noise).

Goodput is metrics.mbit_s (payload only), CPU metrics.cpu_pct (whole host,
% of all CPUs, in iotoll's window). On loopback both ends are this host, so
CPU covers the sender's encryption and the receiver's decryption, and the
TCP stack of both. "CPU ms/Gbit" is busy CPU-milliseconds of the whole host
per Gbit of payload (1000 x cpu_pct / 100 x cpus / Gbit/s; a service
demand); "own CPU ms/Gbit" the same of the client's and the endpoint's own
threads only (cpu.local.account self_pct + endpoint_pct), which other
processes on a busy host do not change. Since each byte is encrypted and decrypted here, the cipher alone
at openssl's speed would cost 2 x 1000 / ceiling CPU-ms per Gbit; that is
printed beside the extra CPU TLS costs over cleartext.
"""
import argparse
import json
import re
import subprocess
import sys
import time

from benchlib import free_port, machine_line, median, report, rotation, run, stop


def openssl_gbit(cipher, seconds):
    """Bytes/s of `openssl speed -evp cipher` at 16384 bytes, in Gbit/s."""
    out, _, _, _ = run(["openssl", "speed", "-evp", cipher, "-seconds", str(seconds), "-bytes", "16384"])
    lines = out.decode().splitlines()
    for i, ln in enumerate(lines):
        if ln.startswith("type") and "16384 bytes" in ln:
            cols = re.findall(r"(\d+) bytes", ln)
            vals = lines[i + 1].split()[-len(cols):]
            v = vals[cols.index("16384")]
            # "The 'numbers' are in 1000s of bytes per second processed."
            return float(v.rstrip("k")) * (1000 if v.endswith("k") else 1) * 8 / 1e9
    sys.exit(f"no 16384-byte column in openssl speed -evp {cipher}:\n{out.decode()[-2000:]}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iotoll", required=True)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--time", type=int, default=10)
    ap.add_argument("--ramp", type=int, default=2)
    ap.add_argument("--openssl-seconds", type=int, default=3)
    ap.add_argument("--ciphers", default="aes-128-gcm,chacha20-poly1305")
    ap.add_argument("--baseline", metavar="BIN",
                    help="another iotoll build whose TLS streams run in the same rotation (its own endpoint), e.g."
                         " the build before a change of crypto provider")
    a = ap.parse_args()
    ex = a.iotoll
    ciphers = a.ciphers.split(",")
    print(machine_line())
    print(f"{a.rounds} rounds x ({a.ramp} s ramp + {a.time} s), alternating; loopback, 1 stream, 128 KiB writes; "
          f"openssl speed -evp CIPHER -bytes 16384 -seconds {a.openssl_seconds} (one core)\n")

    endpoints = {}
    for name, exe in [("iotoll", ex)] + ([("base", a.baseline)] if a.baseline else []):
        port = free_port()
        srv = subprocess.Popen([exe, "net", "serve", "--listen", f"127.0.0.1:{port}"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        endpoints[name] = (exe, port, srv)
        time.sleep(0.5)
        if srv.poll() is not None:
            sys.exit(f"{exe} net serve did not start")
    items = ["clear"] + [f"tls {c}" for c in ciphers] + [f"openssl {c}" for c in ciphers]
    if a.baseline:
        items += [f"base {c}" for c in ciphers]
    res = {k: [] for k in items}
    interfered = {}
    try:
        for r in range(a.rounds):
            for it in rotation(items, r):
                if it.startswith("openssl "):
                    g = openssl_gbit(it.split()[1], a.openssl_seconds)
                    res[it].append({"gbit_s": g})
                    print(f"  round {r + 1} {it:<30} {g:8.2f} Gbit/s", file=sys.stderr)
                    continue
                exe, port, _ = endpoints["base" if it.startswith("base ") else "iotoll"]
                cmd = [exe, "net", "stream", f"127.0.0.1:{port}", "--msg", "128k", "--ramp", f"{a.ramp}s",
                       "--time", f"{a.time}s", "--json", "--quiet", "--no-db"]
                if it != "clear":
                    cmd += ["--tls-cipher", it.split()[1]]
                out, _, _, _ = run(cmd)
                d = json.loads(out)
                m = d["metrics"]
                spg = 1000 * m["cpu_pct"] / 100 * m["cpus"] / (m["mbit_s"] / 1000)
                # The client's and the endpoint's own CPU (their threads,
                # user and system): what other processes on a busy host
                # do not change.
                acct = ((d.get("cpu") or {}).get("local") or {}).get("account") or {}
                own = acct.get("self_pct", 0) + acct.get("endpoint_pct", 0)
                own_pg = 1000 * own / 100 * m["cpus"] / (m["mbit_s"] / 1000)
                intf = ((d.get("cpu") or {}).get("local") or {}).get("interference") or {}
                if intf.get("interfered"):
                    interfered[it] = interfered.get(it, 0) + 1
                res[it].append({"mbit_s": m["mbit_s"], "cpu_pct": m["cpu_pct"], "cpu_ms_per_gbit": spg,
                                "own_ms_per_gbit": own_pg})
                print(f"  round {r + 1} {it:<30} {m['mbit_s']:8.0f} Mbit/s  CPU {m['cpu_pct']:5.1f} %  "
                      f"{spg:.1f} CPU ms/Gbit  own {own_pg:.1f}{'  (interfered)' if intf.get('interfered') else ''}", file=sys.stderr)
    finally:
        for _, _, srv in endpoints.values():
            stop(srv)

    keys = [("mbit_s", "goodput Mbit/s"), ("cpu_pct", "CPU %"), ("cpu_ms_per_gbit", "CPU ms/Gbit"),
            ("own_ms_per_gbit", "own CPU ms/Gbit")]
    for c in ciphers:
        t = f"tls {c}"
        med = report(f"TLS {c} vs cleartext, 1 stream, loopback (medians of {a.rounds})",
                     {"tls": res[t], "clear": res["clear"]}, keys)
        ceil = median([x["gbit_s"] for x in res[f"openssl {c}"]])
        tls_g = med["tls"]["mbit_s"] / 1000
        print(f"   openssl speed -evp {c}, 16384 B, one core: {ceil:.2f} Gbit/s "
              f"(min {min(x['gbit_s'] for x in res[f'openssl {c}']):.2f}, max {max(x['gbit_s'] for x in res[f'openssl {c}']):.2f})")
        print(f"   => goodput tls/clear {med['tls']['mbit_s'] / med['clear']['mbit_s']:.3f}   "
              f"CPU per Gbit tls/clear {med['tls']['cpu_ms_per_gbit'] / med['clear']['cpu_ms_per_gbit']:.3f}   "
              f"TLS goodput / openssl ceiling {tls_g:.2f} / {ceil:.2f} = {tls_g / ceil:.3f}")
        if a.baseline:
            report(f"TLS {c}: this build vs the baseline", {"tls": res[t], "base": res[f"base {c}"]}, keys)
        extra = med["tls"]["cpu_ms_per_gbit"] - med["clear"]["cpu_ms_per_gbit"]
        print(f"   TLS's extra CPU over cleartext {extra:.1f} ms/Gbit; the cipher at openssl's speed, "
              f"encrypt + decrypt: {2000 / ceil:.1f} ms/Gbit")
        print()
    if interfered:
        print("interfered runs (other processes or steal above iotoll's threshold): "
              + ", ".join(f"{k} {v}" for k, v in interfered.items()))


if __name__ == "__main__":
    main()
