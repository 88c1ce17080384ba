"""Instructions and D1 misses per op of db_bench and ampbench under callgrind.

Reads the rows bench/vs-db_bench.sh writes: "fill|read SEED" then four
groups of seven numbers (db_bench at the small size, at twice the size,
ampbench at both), each "worker_Ir worker_D1 worker_engine
worker_engine_D1 bg_Ir bg_D1 other_Ir" as its cg() prints them. Prints the per-op figures per seed and
their mean over the seeds, the verdict on the mean, and where each op's
instructions go.

Usage: python3 bench/cg_per_op.py ROWS CG_NUM CG_READS
"""

import math
import statistics
import sys

TARGET = 1.02
# D1 misses per op: at most this times db_bench's.
D1_TARGET = 1.05
# Student's t at 95% (two-sided) by degrees of freedom.
T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262,
       10: 2.228, 11: 2.201, 15: 2.131}


def interval(ratios):
    """The geometric mean of per-seed ratios and its 95% interval (Student's t on the logs)."""
    logs = [math.log(r) for r in ratios]
    m = statistics.mean(logs)
    if len(logs) < 2:
        return math.exp(m), float("nan"), float("nan")
    h = T95.get(len(logs) - 1, 2.0) * statistics.stdev(logs) / math.sqrt(len(logs))
    return math.exp(m), math.exp(m - h), math.exp(m + h)


def per_op(small, large, ops):
    """The cost of one more op: the difference between the two sizes."""
    w1, d1, e1, ed1, b1, bd1, o1 = small
    w2, d2, e2, ed2, b2, bd2, o2 = large
    return {
        "engine_d1": (ed2 - ed1) / ops,
        "tool_d1": (d2 - d1 - (ed2 - ed1)) / ops,
        "ir": (w2 - w1 + b2 - b1) / ops,
        "d1": (d2 - d1 + bd2 - bd1) / ops,
        "engine": (e2 - e1) / ops,
        "bg": (b2 - b1) / ops,
        "tool": (w2 - w1 - (e2 - e1)) / ops,
        "other": (o2 - o1) / ops,
    }


def main():
    rows_path, num, reads = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    runs = {"fill": [], "read": []}
    for line in open(rows_path):
        f = line.split()
        v = [float(x) for x in f[2:]]
        groups = [v[i:i + 7] for i in range(0, 28, 7)]
        ops = num if f[0] == "fill" else reads
        runs[f[0]].append((f[1], per_op(groups[0], groups[1], ops), per_op(groups[2], groups[3], ops)))

    print(f"{'step':<11} {'seed':>5} {'Ir/op db_bench':>15} {'Ir/op ampbench':>15} {'ratio':>6} "
          f"{'D1miss/op db_bench':>19} {'D1miss/op ampbench':>19} {'ratio':>6}")
    verdicts = []
    for name, step in [("fillrandom", "fill"), ("readrandom", "read")]:
        for seed, d, a in runs[step]:
            print(f"{name:<11} {seed:>5} {d['ir']:>15.0f} {a['ir']:>15.0f} {a['ir'] / d['ir']:>6.3f} "
                  f"{d['d1']:>19.1f} {a['d1']:>19.1f} {a['d1'] / d['d1']:>6.3f}")
        mean = lambda who, k: statistics.mean(r[who][k] for r in runs[step])
        di, ai = mean(1, "ir"), mean(2, "ir")
        ratios = [r[2]["ir"] / r[1]["ir"] for r in runs[step]]
        print(f"{name:<11} {'mean':>5} {di:>15.0f} {ai:>15.0f} {ai / di:>6.3f} "
              f"{mean(1, 'd1'):>19.1f} {mean(2, 'd1'):>19.1f} {mean(2, 'd1') / mean(1, 'd1'):>6.3f}"
              f"   per-seed ratios {min(ratios):.3f}-{max(ratios):.3f}")
        d1r = [r[2]["d1"] / r[1]["d1"] for r in runs[step]]
        verdicts.append((name, ai / di, min(ratios), max(ratios), interval(ratios),
                         mean(2, "d1") / mean(1, "d1"), interval(d1r)))
    print()
    for name, r, lo, hi, (g, glo, ghi), d1, (dg, dlo, dhi) in verdicts:
        verdict = "met" if r <= TARGET else "NOT met"
        print(f"{name}: ampbench/db_bench instructions per op, mean over {len(runs['fill'])} seeds, "
              f"{r:.3f} (seeds {lo:.3f}-{hi:.3f}; per-seed ratios' geometric mean {g:.3f}, 95% interval "
              f"{glo:.3f}-{ghi:.3f}); target <= {TARGET}: {verdict}")
        verdict = "met" if d1 <= D1_TARGET else "NOT met"
        print(f"{name}: ampbench/db_bench D1 misses per op, mean over the seeds, {d1:.3f} (per-seed ratios' "
              f"geometric mean {dg:.3f}, 95% interval {dlo:.3f}-{dhi:.3f}); target <= {D1_TARGET}: {verdict}")

    print()
    print("per op, mean over the seeds (db_bench / ampbench): the engine's foreground path, the rest of the")
    print("worker thread (the tool: keys, values, timing, recording, the API's wrapping), the background threads;")
    print("and the tools' other threads, whose work is per second and not counted in the figures above")
    for name, step in [("fillrandom", "fill"), ("readrandom", "read")]:
        m = lambda who, k: statistics.mean(r[who][k] for r in runs[step])
        di = m(1, "ir")
        print(f"{name:<11} engine {m(1, 'engine'):>7.0f} / {m(2, 'engine'):<7.0f} "
              f"tool {m(1, 'tool'):>5.0f} / {m(2, 'tool'):<5.0f} "
              f"background {m(1, 'bg'):>6.0f} / {m(2, 'bg'):<6.0f} "
              f"(the tool's difference: {(m(2, 'tool') - m(1, 'tool')) / di:+.1%} of db_bench's total; "
              f"other threads {m(1, 'other'):.0f} / {m(2, 'other'):.0f})")
        print(f"{'':<11} D1 misses: engine {m(1, 'engine_d1'):>6.1f} / {m(2, 'engine_d1'):<6.1f} "
              f"tool {m(1, 'tool_d1'):>5.1f} / {m(2, 'tool_d1'):<5.1f} "
              f"background {m(1, 'd1') - m(1, 'engine_d1') - m(1, 'tool_d1'):>5.1f} / "
              f"{m(2, 'd1') - m(2, 'engine_d1') - m(2, 'tool_d1'):<5.1f}")
    print("The engine's own foreground instructions differ between the tools with the memtable's skiplist: its")
    print("node heights come from a generator RocksDB seeds per thread, and the keys from each tool's own")
    print("generator, so the same inserts take more or fewer comparisons in one process than in the other.")


if __name__ == "__main__":
    main()
