"""Instructions and D1 misses per op of db_bench and ampbench under callgrind.

Reads the rows bench/vs-db_bench.sh writes: "fill|read SEED" then four
groups of six numbers (db_bench at the small size, at twice the size,
ampbench at both), each "worker_Ir worker_D1 worker_engine bg_Ir bg_D1
other_Ir" as its cg() prints them. Prints the per-op figures per seed and
their mean over the seeds, the verdict on the mean, and where each op's
instructions go.

Usage: python3 bench/cg_per_op.py ROWS CG_NUM CG_READS
"""

import statistics
import sys

TARGET = 1.02


def per_op(small, large, ops):
    """The cost of one more op: the difference between the two sizes."""
    w1, d1, e1, b1, bd1, o1 = small
    w2, d2, e2, b2, bd2, o2 = large
    return {
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
        groups = [v[i:i + 6] for i in range(0, 24, 6)]
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
        verdicts.append((name, ai / di, min(ratios), max(ratios)))
    print()
    for name, r, lo, hi in verdicts:
        verdict = "met" if r <= TARGET else "NOT met"
        print(f"{name}: ampbench/db_bench instructions per op, mean over {len(runs['fill'])} seeds, "
              f"{r:.3f} (seeds {lo:.3f}-{hi:.3f}); target <= {TARGET}: {verdict}")

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
    print("The engine's own foreground instructions differ between the tools with the memtable's skiplist: its")
    print("node heights come from a generator RocksDB seeds per thread, and the keys from each tool's own")
    print("generator, so the same inserts take more or fewer comparisons in one process than in the other.")


if __name__ == "__main__":
    main()
