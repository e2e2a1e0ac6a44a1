"""The benchmarks' targets and their verdicts, from scripts/bench-run's results.

    python3 scripts/lib/bench-verdicts.py single RESULTS.jsonl
    python3 scripts/lib/bench-verdicts.py compare NAME_A NAME_B ROUNDS DIR

A results file holds one JSON object a measured run (its label, wall seconds,
notifications sent, the CPU of Herald, PostgreSQL and the sink, the WAL
counters around it, Herald's peak RSS) and one for the sitting (h2load before
and after the runs, C0, P0, a seal's CPU). `compare` reads DIR/rR.NAME.jsonl for
each round R and build NAME (scripts/bench-run --compare wrote them A B A B)
and prints, for every run both builds measured: each build's median over the
rounds with its min-max, B over A round by round and the median of those, then
every target's verdict on the medians. `single` prints one build's figures and
the verdicts of the targets that need no second build.

This file owns the targets: a target is stated here once, and BENCHMARKS.md
quotes the verdicts this prints.
"""

import json
import re
import statistics
import sys


def load(path):
    runs, sitting = {}, {}
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            o = json.loads(line)
            if o.get("kind") == "sitting":
                sitting = o
            else:
                runs[o["label"]] = o
    return runs, sitting


def figures(run, sitting):
    """Every figure of one run, derived from its raw counters."""
    n = run["sent"]
    h, p = run["herald_us"], run["pg_us"]
    c0, p0, seal = sitting.get("c0"), sitting.get("p0"), sitting.get("seal_us") or 0
    f = {
        "seconds": run["seconds"],
        "notif/s": n / run["seconds"],
        "vs h2load before": n / run["seconds"] / sitting["h2_before"],
        "vs h2load after": n / run["seconds"] / sitting["h2_after"],
        "Herald µs/n": h,
        "PostgreSQL µs/n": p,
        "sink µs/n": run["sink_us"],
        "RSS MB": run["rss_mb"],
        "WAL B/n": run["wal_bytes"] / n,
        "WAL records/n": run["wal_records"] / n,
        "autovacuums": run["autovacuums"],
    }
    if c0 and p0:
        share = run["sealed"] / n
        f["H/C₀"] = h / c0
        f["P/P₀"] = p / p0
        f["(H+P)/(C₀+P₀)"] = (h + p) / (c0 + p0)
        if share > 0 and seal > 0:
            f["combined without seals"] = (h - share * seal + p) / (c0 + p0)
        else:
            f["combined without seals"] = f["(H+P)/(C₀+P₀)"]
    return f


# The targets. Each: a name, the runs it applies to (a label pattern), and a
# test over the medians (B's figures; A's when the target compares two builds).
#   floor(key, x): B's figure at least x;  ceiling(key, x): at most x;
#   ratio(key, x): B's figure over A's at most x (needs two builds).
POSTER = r"^run \d+, sink$"
NIGHT = r"^night \d+, 3 campaigns$"
TARGETS = [
    # A poster to every device: the rate against h2load on the same sink, and Herald's memory.
    ("a poster to every device at ≥ 0.55× h2load", POSTER, ("floor", "vs h2load before", 0.55)),
    ("a poster to every device in ≤ 150 MB", POSTER, ("ceiling", "RSS MB", 150)),
    # The sample night (three campaigns due together) against h2load.
    ("the sample night at ≥ 0.55× h2load", NIGHT, ("floor", "vs h2load before", 0.55)),
    # The ledger's cost (the ledger by ranges against the ledger row by row, Sql/0044-0047):
    # WAL a notification at most half; PostgreSQL's CPU over its floor at most half of A's;
    # the whole cost over the sitting's baselines at most 2.5 (the poster) and 3.0 (the night, seals aside).
    ("WAL a notification ≤ half of A's", POSTER, ("ratio", "WAL B/n", 0.5)),
    ("P/P₀ ≤ half of A's", POSTER, ("ratio", "P/P₀", 0.5)),
    ("(H+P)/(C₀+P₀) ≤ 2.5", POSTER, ("ceiling", "(H+P)/(C₀+P₀)", 2.5)),
    ("WAL a notification ≤ half of A's", NIGHT, ("ratio", "WAL B/n", 0.5)),
    ("P/P₀ ≤ half of A's", NIGHT, ("ratio", "P/P₀", 0.5)),
    ("(H+P)/(C₀+P₀) without seals ≤ 3.0", NIGHT, ("ceiling", "combined without seals", 3.0)),
]


# Targets between two runs of one sitting: (name, the run's label pattern, the label of the run it
# is compared with, made from the pattern's groups, the figure, at most / at least, the bound).
#   "at least": the run's figure over the other's at least x; "at most": at most x.
PAIRS = [
    # A Live Activity update to every activity within 10% of an alert's rate to the same devices.
    ("an update within 10% of the alert's rate", r"^sale (\d+) step 1$", "alert {0}", "notif/s", "at least", 0.9),
    # Text made for each person at no less than 0.9× the rate of the same poster without templates.
    ("personalized at ≥ 0.9× the plain poster's rate", r"^poster personalized (\d+)$", "poster without templates {0}",
     "notif/s", "at least", 0.9),
]


def pair_verdicts(figures_by_label):
    out = []
    for name, pattern, other, key, kind, x in PAIRS:
        for label, f in figures_by_label.items():
            m = re.match(pattern, label)
            if not m or other.format(*m.groups()) not in figures_by_label:
                continue
            r = f[key] / figures_by_label[other.format(*m.groups())][key]
            ok = r >= x if kind == "at least" else r <= x
            out.append(f"  {label}: {name}: {'met' if ok else 'NOT MET'} ({r:.2f}×)")
    return out


def verdict(test, b, a=None):
    kind, key, x = test
    if key not in b:
        return None
    if kind == "floor":
        v = b[key]
        return v >= x, f"{v:.2f}" + ("" if v >= x else f", {x - v:.2f} short")
    if kind == "ceiling":
        v = b[key]
        return v <= x, f"{v:.2f}" + ("" if v <= x else f", {v - x:.2f} over")
    if a is None or key not in a:
        return None
    r = b[key] / a[key]
    return r <= x, f"{r:.2f}× ({a[key]:.2f} → {b[key]:.2f})"


def fmt(v):
    return f"{v:,.0f}" if abs(v) >= 1000 else f"{v:.2f}"


def median_figures(rounds):
    keys = rounds[0].keys()
    return {k: statistics.median(r[k] for r in rounds if k in r) for k in keys}


def single(path):
    runs, sitting = load(path)
    print("targets (this build):")
    by_label = {label: figures(run, sitting) for label, run in runs.items()}
    for label, f in by_label.items():
        for name, pattern, test in TARGETS:
            if re.match(pattern, label) and test[0] != "ratio":
                v = verdict(test, f)
                if v:
                    print(f"  {label}: {name}: {'met' if v[0] else 'NOT MET'} ({v[1]})")
    for line in pair_verdicts(by_label):
        print(line)


def compare(name_a, name_b, rounds, folder):
    per = {name_a: [], name_b: []}
    for r in range(1, rounds + 1):
        for name in (name_a, name_b):
            runs, sitting = load(f"{folder}/r{r}.{name}.jsonl")
            per[name].append({label: figures(run, sitting) for label, run in runs.items()})
    labels = [l for l in per[name_a][0] if all(l in rr for rr in per[name_a] + per[name_b])]
    print(f"A = {name_a}, B = {name_b}: {rounds} rounds, alternated A B A B, each a sitting of its own")
    print("(its own PostgreSQL, audience and h2load); medians over the rounds, min-max, and B/A round by round.")
    medians = {}
    for label in labels:
        a_rounds = [rr[label] for rr in per[name_a]]
        b_rounds = [rr[label] for rr in per[name_b]]
        ma, mb = median_figures(a_rounds), median_figures(b_rounds)
        medians[label] = (ma, mb)
        print()
        print(f"{label}")
        print(f"  {'figure':<24} {'A median (min-max)':>28} {'B median (min-max)':>28}   B/A by round (median)")
        for key in ma:
            if key not in mb:
                continue
            av = [x[key] for x in a_rounds]
            bv = [x[key] for x in b_rounds]
            pairs = [b / a for a, b in zip(av, bv) if a]
            ratios = f"{', '.join(f'{x:.2f}' for x in pairs)} ({statistics.median(pairs):.2f})" if len(pairs) == len(av) else "–"
            print(f"  {key:<24} {fmt(ma[key]) + ' (' + fmt(min(av)) + '-' + fmt(max(av)) + ')':>28}"
                  f" {fmt(mb[key]) + ' (' + fmt(min(bv)) + '-' + fmt(max(bv)) + ')':>28}   {ratios}")
    print()
    print("targets, on the medians:")
    for label in labels:
        ma, mb = medians[label]
        for name, pattern, test in TARGETS:
            if not re.match(pattern, label):
                continue
            if test[0] == "ratio":
                v = verdict(test, mb, ma)
                if v:
                    print(f"  {label}: {name}: {'met' if v[0] else 'NOT MET'} ({v[1]})")
            else:
                va, vb = verdict(test, ma), verdict(test, mb)
                if va and vb:
                    print(f"  {label}: {name}: A {'met' if va[0] else 'not met'} ({va[1]}),"
                          f" B {'met' if vb[0] else 'NOT MET'} ({vb[1]})")


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "single":
        single(sys.argv[2])
    elif len(sys.argv) == 6 and sys.argv[1] == "compare":
        compare(sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5])
    else:
        sys.exit(__doc__)
