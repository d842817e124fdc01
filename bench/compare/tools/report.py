#!/usr/bin/env python3
"""Turn bench/compare's rows.jsonl into RESULTS.md, results.csv and SVG charts
(full mode), or a small table on stdout plus quick.md (quick mode)."""

import argparse
import csv
import json
import os
import shutil
import subprocess
import sys

CSV_COLUMNS = [
    "contender", "version", "condition", "title", "cc", "link_spec", "loss_at", "status",
    "runs", "runs_ok",
    "tcp1_mbps", "tcp1_mbps_min", "tcp1_mbps_runs", "tcp4_mbps", "tcp4_mbps_min", "tcp4_mbps_runs",
    "tcp1_retransmits",
    "idle_rtt_p50_ms", "idle_rtt_p99_ms", "idle_ping_loss_pct",
    "loaded_rtt_p50_ms", "loaded_rtt_p99_ms", "loaded_ping_loss_pct",
    "udp_sent", "udp_received", "udp_loss_pct",
    "copy_s", "copy_status", "copy_received_mib",
    "rr_p50_us", "rr_p99_us", "rr_count", "rr_status",
    "tcp_bytes", "daemon_cpu_s", "cpu_s_per_gb", "rcvbuf_drops",
    "tcp1_status", "tcp4_status",
    "link_a2b_frames", "link_a2b_lost_pct", "link_b2a_frames", "link_b2a_lost_pct",
    "link_queue_drops",
    "train_a2b_packets", "train_a2b_gso_pct", "train_a2b_gso_bytes_pct", "train_a2b_lost_pct",
    "train_a2b_bytes_lost_pct",
    "train_b2a_packets", "train_b2a_gso_pct", "train_b2a_gso_bytes_pct", "train_b2a_lost_pct",
    "train_b2a_bytes_lost_pct",
]
# runs.csv: every run of every cell, before the median is taken
RUN_COLUMNS = [c for c in CSV_COLUMNS if c not in (
    "runs", "runs_ok", "tcp1_mbps_min", "tcp1_mbps_runs", "tcp4_mbps_min", "tcp4_mbps_runs")]
RUN_COLUMNS.insert(RUN_COLUMNS.index("status"), "run")
# CSV fields that are measured values, aggregated over runs as the median
NUMERIC = [c for c in CSV_COLUMNS if c not in (
    "contender", "version", "condition", "title", "cc", "link_spec", "loss_at", "status",
    "runs", "runs_ok", "copy_status", "rr_status", "tcp1_status", "tcp4_status",
    "tcp1_mbps_min", "tcp1_mbps_runs", "tcp4_mbps_min", "tcp4_mbps_runs")]

# x position (injected loss %) of the conditions in the loss charts
LOSS_SERIES = [("clean", 0), ("loss1", 1), ("loss5", 5), ("loss10", 10), ("loss20", 20)]
MIN_GB_FOR_CPU = 0.05  # below this, CPU per GB is mostly idle overhead


def num(v):
    return v if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def derive(r, contenders):
    """One flat CSV-style dict from a cell row."""
    d = {
        "contender": r["contender"],
        "version": contenders.get(r["contender"], {}).get("version", ""),
        "condition": r["condition"],
        "cc": r.get("cc", ""),
        "link_spec": r.get("spec", "") or "none",
        "loss_at": r.get("loss_at", "link"),
        "status": r.get("status", ""),
        "run": r.get("rep", 1),
    }
    if r.get("status") != "ok":
        return d
    if r.get("tcp1_status") == "ok":
        d["tcp1_mbps"] = r.get("tcp1_mbps")
        d["tcp1_retransmits"] = r.get("tcp1_retransmits")
    d["tcp1_status"] = r.get("tcp1_status")
    if r.get("tcp4_status") == "ok":
        d["tcp4_mbps"] = r.get("tcp4_mbps")
    d["tcp4_status"] = r.get("tcp4_status")
    for src, dst in (("idle", "idle"), ("loaded", "loaded")):
        d[dst + "_rtt_p50_ms"] = r.get(src + "_p50_ms")
        d[dst + "_rtt_p99_ms"] = r.get(src + "_p99_ms")
        d[dst + "_ping_loss_pct"] = r.get(src + "_loss_pct")
    sent, got = num(r.get("udps_sent")), num(r.get("udpr_received"))
    if sent:
        d["udp_sent"], d["udp_received"] = sent, got or 0
        d["udp_loss_pct"] = round(100.0 * (sent - (got or 0)) / sent, 2)
    if "copy_status" in r:
        d["copy_status"] = r["copy_status"]
        if r["copy_status"] == "ok":
            d["copy_s"] = r.get("copy_seconds")
        elif num(r.get("copysrv_bytes")) is not None:
            d["copy_received_mib"] = round(r["copysrv_bytes"] / 1048576.0, 1)
    d["rr_status"] = r.get("rr_status")
    if r.get("rr_count"):
        d["rr_p50_us"], d["rr_p99_us"], d["rr_count"] = r.get("rr_p50_us"), r.get("rr_p99_us"), r["rr_count"]
    for dr in ("a2b", "b2a"):
        # Random loss: counted by nftables at the receiving host when it was
        # applied there, by the emulator otherwise.
        if num(r.get("hosts_%s_in_seen" % dr)) is not None:
            rx, lost = num(r.get("hosts_%s_in_seen" % dr)), num(r.get("hosts_%s_in_lost" % dr))
        else:
            rx, lost = num(r.get("link_%s_rx" % dr)), num(r.get("link_%s_lost" % dr))
        if rx:
            d["link_%s_frames" % dr] = rx
            d["link_%s_lost_pct" % dr] = round(100.0 * (lost or 0) / rx, 2)
        seen, lost = num(r.get("hosts_%s_out_seen" % dr)), num(r.get("hosts_%s_out_lost" % dr))
        if seen:
            d["train_%s_packets" % dr] = seen
            d["train_%s_lost_pct" % dr] = round(100.0 * (lost or 0) / seen, 2)
            b, bl = num(r.get("hosts_%s_out_bytes" % dr)), num(r.get("hosts_%s_out_bytes_lost" % dr))
            if b:
                d["train_%s_bytes_lost_pct" % dr] = round(100.0 * (bl or 0) / b, 2)
            g, gb = num(r.get("hosts_%s_out_gso" % dr)), num(r.get("hosts_%s_out_gso_bytes" % dr))
            if g is not None:
                d["train_%s_gso_pct" % dr] = round(100.0 * g / seen, 2)
                if b:
                    d["train_%s_gso_bytes_pct" % dr] = round(100.0 * (gb or 0) / b, 2)
    qd = [num(r.get("link_%s_queue_drops" % dr)) for dr in ("a2b", "b2a")]
    if any(v is not None for v in qd):
        d["link_queue_drops"] = sum(v or 0 for v in qd)
    if num(r.get("rcvbuf_drops")) is not None:
        d["rcvbuf_drops"] = r["rcvbuf_drops"]
    b = (num(r.get("tcp1_bytes")) or 0) + (num(r.get("tcp4_bytes")) or 0)
    d["tcp_bytes"] = b
    c0, c2 = num(r.get("cpu_cpu0")), num(r.get("cpu_cpu2"))
    if r.get("ndaemons") and c0 is not None and c2 is not None:
        d["daemon_cpu_s"] = round(c2 - c0, 2)
        if b / 1e9 >= MIN_GB_FOR_CPU:
            d["cpu_s_per_gb"] = round((c2 - c0) / (b / 1e9), 2)
    return d


def median(values):
    v = sorted(values)
    n = len(v)
    if n == 0:
        return None
    m = v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2.0
    if isinstance(m, float):
        return int(m) if m.is_integer() and all(isinstance(x, int) for x in v) else round(m, 3)
    return m


def aggregate(runs):
    """One cell from its runs: the median of every measured value over the
    runs where it was measured, the minimum and every value of the two
    throughputs, and how many runs there were and succeeded."""
    ok = [d for d in runs if d.get("status") == "ok"]
    base = dict(ok[0] if ok else runs[0])
    base.pop("run", None)
    base["runs"], base["runs_ok"] = len(runs), len(ok)
    if not ok:
        return base
    for k in NUMERIC:
        vals = [num(d.get(k)) for d in ok if num(d.get(k)) is not None]
        if k in ("tcp1_mbps", "tcp4_mbps"):
            vals = [num(d.get(k)) for d in ok
                    if d.get(k[:4] + "_status") == "ok" and num(d.get(k)) is not None]
        base[k] = median(vals)
        if k in ("tcp1_mbps", "tcp4_mbps") and vals:
            base[k + "_min"] = min(vals)
            base[k + "_runs"] = ";".join("%g" % v for v in vals)
    for k in ("tcp1_status", "tcp4_status", "rr_status", "copy_status"):
        sts = [d.get(k) for d in ok if k in d]
        if sts:
            base[k] = "ok" if "ok" in sts else sts[0]
    # the copy time is a median over the runs whose copy finished
    copies = [num(d.get("copy_s")) for d in ok if d.get("copy_status") == "ok"]
    base["copy_s"] = median([c for c in copies if c is not None])
    return base


def fmt(v, kind=""):
    if v is None or v == "":
        return "–"
    if not isinstance(v, (int, float)):
        return str(v)
    if kind == "mbps":
        return "%.0f" % v if v >= 100 else ("%.1f" % v if v >= 10 else "%.2f" % v)
    if kind == "ms":
        return "%.2f" % v if v < 10 else ("%.1f" % v if v < 100 else "%.0f" % v)
    if kind == "us":
        return "%.0f" % v
    if kind == "dur_us":  # a duration in microseconds, shown with a fitting unit
        if v < 1000:
            return "%.0f µs" % v
        if v < 1e6:
            return ("%.1f ms" if v < 1e4 else "%.0f ms") % (v / 1000)
        return "%.1f s" % (v / 1e6)
    if kind == "pct":
        return "%.2f" % v if v < 10 else "%.1f" % v
    if kind == "s":
        return "%.1f" % v
    return str(v)


def pair(a, b, kind):
    if a is None and b is None:
        return "–"
    return "%s / %s" % (fmt(a, kind), fmt(b, kind))


def copy_cell(d, timeout):
    st = d.get("copy_status")
    if st is None:
        return "–"
    if st == "ok":
        return fmt(d.get("copy_s"), "s")
    if st == "timeout":
        got = d.get("copy_received_mib")
        if got is not None:
            return "timeout (%s MB in %g s)" % (("%.0f" if got >= 10 else "%.1f") % got, timeout)
        return "timeout (>%g s)" % timeout
    return st


def test_status(st):
    """A short table entry for a failed measurement (the CSV keeps the full text)."""
    if not st:
        return "–"
    low = st.lower()
    if "unable to connect" in low or "connect failed" in low:
        return "no connection"
    if "interrupt" in low or "stalled" in low:
        return "stalled"
    if st in ("no data", "no result", "no answer"):
        return st
    return "failed"


def cell_cells(d, meta):
    st = d.get("status", "")
    if st != "ok":
        return None
    cpu = d.get("cpu_s_per_gb")
    if cpu is None:
        cpu = "n/a" if d["contender"] == "raw" or "daemon_cpu_s" not in d else "(<50 MB moved)"
    return [
        tput(d, "tcp1"),
        tput(d, "tcp4"),
        pair(d.get("idle_rtt_p50_ms"), d.get("idle_rtt_p99_ms"), "ms"),
        pair(d.get("loaded_rtt_p50_ms"), d.get("loaded_rtt_p99_ms"), "ms"),
        fmt(d.get("udp_loss_pct"), "pct"),
        copy_cell(d, meta.get("copy_timeout", 0)),
        pair(d.get("rr_p50_us"), d.get("rr_p99_us"), "dur_us") if d.get("rr_count") else test_status(d.get("rr_status")),
        fmt(cpu, "s") if isinstance(cpu, (int, float)) else cpu,
        fmt(d.get("rcvbuf_drops")),
    ]


def tput(d, test):
    """Throughput: the median, and the minimum in parentheses when the cell
    ran more than once."""
    if d.get(test + "_status") != "ok":
        return test_status(d.get(test + "_status"))
    v = fmt(d.get(test + "_mbps"), "mbps")
    n = len(str(d.get(test + "_mbps_runs", "")).split(";"))
    if n > 1:
        v += " (%s)" % fmt(d.get(test + "_mbps_min"), "mbps")
    return v


def table(rows, meta, with_copy=True, first_col="Contender"):
    hdr = [first_col, "TCP 1 stream Mbit/s", "TCP 4 streams Mbit/s", "idle RTT p50 / p99 ms",
           "loaded RTT p50 / p99 ms", "UDP delivered loss %",
           "%d MB copy s" % meta.get("copy_mb", 100), "TCP req/resp p50 / p99", "daemon CPU s/GB",
           "B rcvbuf drops"]
    keep = [i for i in range(len(hdr)) if with_copy or i != 6]
    lines = ["| " + " | ".join(hdr[i] for i in keep) + " |",
             "|" + "|".join("---" if i == 0 else "---:" for i in keep) + "|"]
    for label, d in rows:
        cells = cell_cells(d, meta)
        if d.get("runs", 1) > 1:
            label = "%s (%s)" % (label, "%d runs" % d["runs"] if d.get("runs_ok") == d["runs"]
                                 else "%d of %d runs ok" % (d.get("runs_ok", 0), d["runs"]))
        if cells is None:
            lines.append("| %s | %s |" % (label, d.get("status", "")) + " |" * (len(keep) - 2))
            continue
        full = [label] + cells
        lines.append("| " + " | ".join(full[i] for i in keep) + " |")
    return "\n".join(lines)


def load(path):
    meta, total = {}, None
    conds, contenders, cells = [], {}, []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            r = json.loads(line)
            k = r.get("kind")
            if k == "meta":
                meta = r
            elif k == "condition":
                conds.append(r)
            elif k == "contender":
                contenders[r["name"]] = r
            elif k == "cell":
                cells.append(r)
            elif k == "total":
                total = r.get("seconds")
    return meta, conds, contenders, cells, total


def cc_name(cc):
    return {"cubic": "CUBIC", "bbr": "BBR"}.get(cc, cc)


# ------------------------------------------------------------------ charts

STYLE = {  # contender -> (colour, extra style)
    "raw": ("#000000", "dt 2 lw 2"),
    "yip": ("#d62728", "lw 3"),
    "wireguard-go": ("#1f77b4", "lw 2"),
    "openvpn": ("#ff7f0e", "lw 2"),
    "tinc": ("#8c564b", "lw 2"),
    "n2n": ("#9467bd", "lw 2"),
    "yggdrasil": ("#2ca02c", "lw 2"),
    "nebula": ("#17becf", "lw 2"),
}
EXTRA_COLOURS = ["#e377c2", "#7f7f7f", "#bcbd22", "#393b79"]


def charts(out_dir, derived, order, cond_names):
    if not shutil.which("gnuplot"):
        print("report: gnuplot not found; no charts", file=sys.stderr)
        return []
    series = [(c, x) for c, x in LOSS_SERIES if c in cond_names]
    if len(series) < 2:
        return []
    dat = os.path.join(out_dir, ".loss-series.dat")
    names = []
    with open(dat, "w") as f:
        for c in order:
            pts = []
            for cond, x in series:
                d = derived.get((c, cond))
                if not d or d.get("status") != "ok":
                    continue
                rr99 = d.get("rr_p99_us")
                pts.append((x, d.get("tcp1_mbps"), d.get("idle_rtt_p99_ms"),
                            d.get("loaded_rtt_p99_ms"), d.get("udp_loss_pct"),
                            None if rr99 is None else rr99 / 1000.0))
            if not pts:
                continue
            names.append(c)
            f.write("# %s\n" % c)
            for p in pts:
                f.write(" ".join("NaN" if v is None else str(v) for v in p) + "\n")
            f.write("\n\n")
    if not names:
        os.unlink(dat)
        return []

    def style(i, n):
        colour, extra = STYLE.get(n, (EXTRA_COLOURS[i % len(EXTRA_COLOURS)], "lw 2"))
        return "lc rgb '%s' %s pt %d ps 0.9" % (colour, extra, [7, 5, 9, 11, 13, 4, 6, 8, 10, 12][i % 10])

    def plot(col, titles=True):
        return ", ".join(
            "'%s' index %d using 1:%d with linespoints %s %s" % (
                dat, i, col, style(i, n), "title '%s'" % n if titles else "notitle")
            for i, n in enumerate(names))

    term = "set terminal svg size %d,%d dynamic enhanced font 'Helvetica,13' background '#ffffff'\n"
    common = """
set grid lc rgb '#dddddd'
set xlabel 'injected random loss, each way (%)'
set xtics (0, 1, 5, 10, 20)
set xrange [-0.5:20.5]
set datafile missing 'NaN'
"""
    files = []
    script = term % (760, 460) + common + """
set key outside right top
set output '%(o)s/throughput-vs-loss.svg'
set title 'TCP throughput (1 stream, CUBIC) vs random loss, no added delay'
set ylabel 'Mbit/s (log scale)'
set logscale y
plot %(p)s
unset logscale y
""" % {"o": out_dir, "p": plot(2)}
    files.append("throughput-vs-loss.svg")
    script += term % (1300, 460) + """
set output '%(o)s/rtt-p99-vs-loss.svg'
set multiplot layout 1,3 title 'p99 latency vs random loss, no added delay (CUBIC)' margins 0.05,0.86,0.13,0.83 spacing 0.075
unset key
set ylabel 'ms (log scale)'
set logscale y
set title 'ping, idle (answered echoes)'
plot %(pi)s
set title 'ping, while one TCP stream runs'
plot %(pl)s
set title 'TCP 64-byte request/response'
set key at screen 0.995,0.83 right top
plot %(pr)s
unset logscale y
unset multiplot
""" % {"o": out_dir, "pi": plot(3, False), "pl": plot(4, False), "pr": plot(6)}
    files.append("rtt-p99-vs-loss.svg")
    script += term % (760, 460) + """
set key outside right top
set output '%(o)s/delivered-vs-injected-loss.svg'
set title 'Steady UDP stream: delivered loss vs injected loss'
set ylabel 'end-to-end loss (%%)'
set yrange [-0.5:*]
plot x with lines lc rgb '#aaaaaa' dt 3 title 'injected', %(p)s
""" % {"o": out_dir, "p": plot(5)}
    files.append("delivered-vs-injected-loss.svg")
    try:
        subprocess.run(["gnuplot"], input=script, text=True, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    except subprocess.CalledProcessError as e:
        print("report: gnuplot failed: %s" % e.stderr, file=sys.stderr)
        files = []
    os.unlink(dat)
    return files


# ------------------------------------------------------------------ documents

def write_csv(path, derived_list, columns=None):
    columns = columns or CSV_COLUMNS
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=columns, extrasaction="ignore")
        w.writeheader()
        for d in derived_list:
            w.writerow({k: ("" if d.get(k) is None else d.get(k)) for k in columns})


def cell_runs(cells, contenders, conds):
    """(contender, condition id) -> the derived rows of its runs, in order."""
    titles = {c["name"]: c.get("title", "") for c in conds}
    runs = {}
    for r in cells:
        d = derive(r, contenders)
        d["title"] = titles.get(d["condition"], "")
        runs.setdefault((r["contender"], r["condition"]), []).append(d)
    return runs


def cond_heading(k):
    """A condition's title, with where its random loss was applied."""
    spec = k.get("spec") or ""
    t = k["title"]
    if "loss=" in spec:
        t += " — loss by nftables at the hosts' ingress" if k.get("loss_at") == "hosts" else " — loss in the emulator"
    elif "train=" in spec:
        t += " — dropped by nftables at the senders' egress"
    return t


def durations(meta):
    return (
        "TCP throughput: iperf3, 1 stream for %(t1)s s (the loaded-RTT pings run in its middle), "
        "then 4 streams for %(t4)s s, A → B. "
        "Idle RTT: %(ping_n)s pings at 10 ms intervals. Loaded RTT: pings at 10 ms intervals from 1.5 s into "
        "the 1-stream test until 1.5 s before its end. "
        "UDP delivered loss: %(udp_pps)s packets/s of %(udp_size)s bytes for %(udp_t)s s, sequence-numbered, "
        "counted at the receiver. "
        "Request/response: %(rr_size)s-byte request, %(rr_size)s-byte reply, back to back over one TCP connection "
        "(TCP_NODELAY) for %(rr_t)s s. "
        % meta
        + ("File copy: %(copy_mb)s MiB over one TCP connection, SHA-256 checked, timeout %(copy_timeout)s s. " % meta
           if meta.get("copy_mb") else "File copy: not run. ")
        + "Daemon CPU: utime+stime of the tunnel daemons (both ends, from /proc/PID/stat) across both TCP tests, "
        "divided by the bytes those tests delivered (shown only when at least 50 MB moved). "
        "B rcvbuf drops: datagrams the kernel in B dropped because a UDP socket's receive buffer was full "
        "(RcvbufErrors in B's /proc/net/snmp) across both TCP tests; for a UDP tunnel, traffic it lost "
        "after the link delivered it."
    )


def full_report(a, meta, conds, contenders, cells, total):
    order = [c for c in ["raw", "yip", "wireguard-go"] if c in contenders]
    order += [c for c in contenders if c not in order]
    runs = cell_runs(cells, contenders, conds)
    derived = {key: aggregate(v) for key, v in runs.items()}

    csv_path = os.path.join(a.out, "results.csv")
    write_csv(csv_path, [derived[(c, k["name"])] for k in conds for c in order if (c, k["name"]) in derived])
    write_csv(os.path.join(a.out, "runs.csv"),
              [d for k in conds for c in order for d in runs.get((c, k["name"]), [])], RUN_COLUMNS)
    svgs = charts(a.svg_dir, derived, order, [c["name"] for c in conds])

    L = []
    L.append("# yip beside other tunnels: comparison results\n")
    L.append("**Read this first.** These numbers come from one shared, noisy virtual machine "
             "(%s cores), where the link emulator, both tunnel daemons and the traffic "
             "generators all compete for the same CPUs. Absolute numbers will differ on other "
             "machines and between runs; the ratios between contenders **within this run** are "
             "what matter. Every contender ran over the same emulated links, in the same run, "
             "one after another.\n" % meta.get("cores", "?"))
    L.append("- Date: %s" % meta.get("date", "?"))
    L.append("- Command: `%s` (as root)" % meta.get("command", "?"))
    L.append("- Machine: %s, %s cores, %s GiB RAM; kernel %s; %s" % (
        meta.get("cpu", "?"), meta.get("cores", "?"), meta.get("mem_gib", "?"),
        meta.get("kernel", "?"), meta.get("os", "?")))
    L.append("- Link emulator: %s" % meta.get("linkem", "?"))
    L.append("- Tools: %s; %s" % (meta.get("iperf3", "iperf3"), meta.get("python", "python3")))
    if total is not None:
        L.append("- Total run time: %d min %02d s" % (total // 60, total % 60))
    L.append("")
    L.append("## Setup\n")
    L.append("Three network namespaces, A — M — B, are rebuilt for every contender. A and B each have a "
             "veth to M (underlay 198.18.0.1/24 and 198.18.0.2/24); in M the link emulator forwards "
             "raw Ethernet frames between the two veths and impairs each direction with the same "
             "settings. TSO, GSO, GRO and UDP segmentation are off on all four veth ends, so the "
             "impairments apply per wire frame. A and B get the same socket and TCP buffer limits for every contender "
             "(net.core.rmem_max/wmem_max and tcp_rmem/tcp_wmem maximum 32 MiB, "
             "tcp_no_metrics_save=1) and an explicit TCP congestion control, named in every table. "
             "Every run of every condition starts a fresh tunnel after the link has that condition, "
             "as a user on such a path would have it; nothing carries over from one condition to the next. "
             "Random loss is applied either by the emulator, per wire frame before the delay line, or "
             "(“loss by nftables at the hosts' ingress”) by an nftables `numgen random` rule on A's and "
             "B's veth ingress, per received datagram, with the emulator only delaying; each table says "
             "which. Whole-train loss (`train=`) drops packets at the senders' egress before "
             "segmentation, so a UDP GSO train is lost whole (README: conditions). "
             "No rate limit is set: the link is as fast as the emulator forwards, so throughput on a "
             "clean link is bounded by CPU (2 cores shared by everything). Tunnels use their "
             "inner addresses 198.19.0.1 and 198.19.0.2 (Yggdrasil: its key-derived IPv6 addresses). "
             "Traffic flows A → B.\n")
    L.append(durations(meta) + "\n")
    L.append("Method, conditions and how to add a contender: "
             "[bench/compare/README.md](%s).\n" % os.path.relpath(
                 os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "README.md"),
                 os.path.abspath(a.out)))
    L.append("Caveats:\n")
    L.append("- On a clean link every tunnel is CPU-bound: the emulator, both daemons and the traffic "
             "tools share the same cores. The raw row is the ceiling of this setup, not of the hardware.")
    L.append("- Daemon CPU counts the tunnel processes' user and system time only; kernel work done "
             "in softirq context (veth, UDP receive, TUN) is not attributed to any contender.")
    L.append("- With loss in the emulator every contender meets the same pseudo-random sequence of per-frame "
             "loss decisions for a condition and run (the emulator is restarted with the same seed); "
             "nftables' `numgen random` cannot be seeded.")
    if meta.get("reps", 1) > 1 or meta.get("reps_others", 1) > 1:
        def times(n):
            return "once" if n == 1 else "%d times" % n
        L.append("- yip's cells ran %s, the other contenders' %s, each run with a fresh tunnel; "
                 "tables show the median of each value over the runs, throughput as “median (minimum)”, "
                 "and `runs.csv` has every run." % (times(meta.get("reps", 1)), times(meta.get("reps_others", 1))))
    L.append("- yip is whatever `make` built from this tree at the time of the run; its version "
             "column shows the commit, with `+dirty` when `src/` had uncommitted changes.")
    L.append("- Yggdrasil carries everything over its TCP peering connection, and it selects BBR "
             "for that connection itself (`ss -ti` shows `bbr` while the namespace default is CUBIC). "
             "The outer BBR connection repairs the loss, so the inner TCP hardly sees any, in every "
             "condition; the congestion control named in a table applies to the inner TCP only. "
             "n2n is a layer-2 (TAP) tunnel.\n")
    L.append("## Contenders\n")
    L.append("| Contender | Version | Inner MTU | Notes | Up in | Status |")
    L.append("|---|---|---:|---|---:|---|")
    for c in order:
        k = contenders[c]
        L.append("| %s | %s | %s | %s | %s | %s |" % (
            k.get("desc", c), k.get("version", "?"), fmt(k.get("mtu")), k.get("notes", "") or "",
            ("%.1f s" % k["up_s"]) if num(k.get("up_s")) is not None else "–", k.get("status", "")))
    L.append("")

    # Summary matrix
    L.append("## Summary: TCP throughput, 1 stream (Mbit/s)\n")
    L.append("Median over the runs, the minimum in parentheses where a cell ran more than once. "
             "`@hosts`: random loss applied by nftables at the hosts instead of the emulator.\n")
    L.append("| Contender | " + " | ".join("%s (%s)" % (c["name"], cc_name(c["cc"])) for c in conds) + " |")
    L.append("|---|" + "---:|" * len(conds))
    for c in order:
        cells_ = []
        for k in conds:
            d = derived.get((c, k["name"]), {})
            if d.get("status") != "ok":
                cells_.append(short_status(d.get("status", "–")))
            else:
                cells_.append(tput(d, "tcp1"))
        L.append("| %s | %s |" % (c, " | ".join(cells_)))
    L.append("")
    if svgs:
        L.append("## Charts\n")
        for s in svgs:
            L.append("![%s](%s)\n" % (s[:-4].replace("-", " "), s))
    L.append("## Results per condition\n")
    L.append("RTTs are over the answered echoes only. “timeout” means the copy did not finish in time; "
             "“no connection” means the test's TCP connection could not be opened in time, “stalled” that the test had to be killed; “–” means no value (the CSV has the full reason). The heading of each table gives the share of frames the emulator actually dropped A → B during that condition (mean over contenders).\n")
    for k in conds:
        L.append("### %s — link `%s`, TCP congestion control %s%s\n" % (
            cond_heading(k), k.get("spec") or "none", cc_name(k["cc"]), measured_loss(k, derived)))
        rows = [(c, derived[(c, k["name"])]) for c in order if (c, k["name"]) in derived]
        L.append(table(rows, meta, with_copy=bool(meta.get("copy_mb"))))
        L.append("")
        g = gso_line(k, rows)
        if g:
            L.append(g)
    L.append("## Files\n")
    L.append("- `results.csv`: every number above, one row per contender and condition, with statuses "
             "(medians over the runs; `tcp1_mbps_min`/`_runs` the minimum and every run's value).")
    L.append("- `runs.csv`: the same for every single run.")
    for s in svgs:
        L.append("- `%s`" % s)
    L.append("- Raw logs stay on the machine that ran the suite, in `build/bench/`.")
    L.append("")
    with open(os.path.join(a.out, "RESULTS.md"), "w") as f:
        f.write("\n".join(L))
    print("report: wrote %s, %s%s" % (os.path.join(a.out, "RESULTS.md"), csv_path,
                                       "".join(", " + os.path.join(a.svg_dir, s) for s in svgs)))


def measured_loss(k, derived):
    """What the drops actually did A → B in a condition, mean over contenders."""
    def mean(key):
        v = [d[key] for (c, n), d in derived.items() if n == k["name"] and d.get(key) is not None]
        return sum(v) / len(v) if v else None
    spec = k.get("spec") or ""
    out = ""
    if "loss=" in spec:
        m = mean("link_a2b_lost_pct")
        if m is not None:
            out += "; measured A→B frame loss %.2f %%" % m
    if "train=" in spec:
        p, b = mean("train_a2b_lost_pct"), mean("train_a2b_bytes_lost_pct")
        if p is not None:
            out += "; measured A→B: %.2f %% of sent packets, %.2f %% of bytes" % (p, b or 0)

    return out


def gso_line(k, rows):
    """For whole-train loss: how much each contender sent in GSO packets."""
    if "train=" not in (k.get("spec") or ""):
        return None
    parts = ["%s %s %%" % (c, fmt(d.get("train_a2b_gso_bytes_pct"), "pct"))
             for c, d in rows if d.get("train_a2b_gso_bytes_pct") is not None]
    if not parts:
        return None
    return ("Share of the bytes A sent in GSO packets (longer than one frame, so lost whole): "
            + ", ".join(parts) + ".\n")


def short_status(st):
    if st.startswith("not installed"):
        return "not installed"
    if st.startswith("failed to start"):
        return "failed to start"
    if st.startswith("skipped"):
        return "skipped"
    if st.startswith("tunnel down"):
        return "tunnel down"
    return st or "–"


def quick_report(a, meta, conds, contenders, cells, total):
    L = ["# bench-quick (%s)\n" % meta.get("date", "")]
    L.append("One shared, noisy machine: compare the rows with each other, not with other runs.\n")
    for c in contenders.values():
        L.append("- %s: %s — %s" % (c["name"], c.get("version", "?"), c.get("status", "")))
    L.append("")
    runs = cell_runs(cells, contenders, conds)
    for k in conds:
        rows = [(c, aggregate(v)) for (c, n), v in runs.items() if n == k["name"]]
        L.append("%s — link `%s`, %s%s\n" % (cond_heading(k), k.get("spec") or "none", cc_name(k["cc"]),
                                            measured_loss(k, {(c, k["name"]): d for c, d in rows})))
        L.append(table(rows, meta, with_copy=bool(meta.get("copy_mb"))))
        L.append("")
        g = gso_line(k, rows)
        if g:
            L.append(g)
    L.append(durations(meta))
    if total is not None:
        L.append("\nTotal: %d s." % total)
    text = "\n".join(L) + "\n"
    with open(os.path.join(a.out, "quick.md"), "w") as f:
        f.write(text)
    sys.stdout.write("\n" + text)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--rows", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--svg-dir")
    p.add_argument("--mode", choices=["full", "quick"], default="full")
    a = p.parse_args()
    a.svg_dir = a.svg_dir or a.out
    meta, conds, contenders, cells, total = load(a.rows)
    if a.mode == "quick":
        quick_report(a, meta, conds, contenders, cells, total)
    else:
        full_report(a, meta, conds, contenders, cells, total)


if __name__ == "__main__":
    main()
