#!/usr/bin/env python3
"""Compares two `ampbench report --format json` files field by field.

Usage: scripts/json-diff.py BEFORE.json AFTER.json [--tolerance 0.25]

Each step is matched by (engine, step, repetition); each of its fields
(figures, latency summaries, extras, notes, not-measured reasons, model
checks) is flattened to a path. A field is `same` when both values are
equal, `within` when both are numbers whose ratio is within the
tolerance (a measured figure varies run to run: this machine is shared,
about ±10%), `apart` when it is outside it, and `only before` / `only
after` when one file lacks it (a field added or removed). Per-interval
series (intervals, rates, spectra, slices) are compared by length only.
It prints a count per class and every field `apart` or on one side only.
"""

import argparse
import json

SERIES = {"intervals", "rates", "latency_spectrum", "slices"}


def flatten(prefix, v, out):
    if isinstance(v, dict):
        for k, x in v.items():
            flatten(f"{prefix}.{k}" if prefix else k, x, out)
    elif isinstance(v, list) and v and isinstance(v[0], dict) and "figure" in v[0]:
        for c in v:  # model checks, keyed by their figure
            flatten(f"{prefix}[{c['figure']}]", c, out)
    elif isinstance(v, list):
        out[prefix] = json.dumps(v, sort_keys=True)
    else:
        out[prefix] = v


def steps(path):
    with open(path) as f:
        j = json.load(f)
    by = {}
    for s in j["steps"]:
        key = (s["engine"], s["step"], s.get("rep", 0))
        flat = {}
        for k, v in s.items():
            if k in SERIES:
                flat[f"{k}.len"] = len(v)
            else:
                flatten(k, v, flat)
        by[key] = flat
    return by


def main():
    p = argparse.ArgumentParser(description="Compares two ampbench JSON reports field by field.")
    p.add_argument("before")
    p.add_argument("after")
    p.add_argument("--tolerance", type=float, default=0.25)
    a = p.parse_args()
    tol = a.tolerance
    before, after = steps(a.before), steps(a.after)
    counts = {"same": 0, "within": 0, "apart": 0, "only before": 0, "only after": 0}
    shown = []
    for key in sorted(set(before) | set(after)):
        a, b = before.get(key), after.get(key)
        if a is None or b is None:
            side = "only after" if a is None else "only before"
            counts[side] += 1
            shown.append(f"{side:11}  {key[0]} {key[1]}: the whole step")
            continue
        for f in sorted(set(a) | set(b)):
            if f not in b:
                counts["only before"] += 1
                shown.append(f"only before  {key[0]} {key[1]} {f} = {a[f]}")
            elif f not in a:
                counts["only after"] += 1
                shown.append(f"only after   {key[0]} {key[1]} {f} = {b[f]}")
            elif a[f] == b[f]:
                counts["same"] += 1
            elif isinstance(a[f], (int, float)) and isinstance(b[f], (int, float)) \
                    and not isinstance(a[f], bool):
                x, y = float(a[f]), float(b[f])
                lo, hi = min(abs(x), abs(y)), max(abs(x), abs(y))
                if (x >= 0) == (y >= 0) and hi > 0 and lo / hi >= 1 - tol:
                    counts["within"] += 1
                else:
                    counts["apart"] += 1
                    r = f"{y / x:.2f}x" if x else "from 0"
                    shown.append(f"apart        {key[0]} {key[1]} {f}: {x:g} -> {y:g} ({r})")
            else:
                counts["apart"] += 1
                shown.append(f"apart        {key[0]} {key[1]} {f}: {a[f]!r} -> {b[f]!r}")
    total = sum(counts.values())
    print(f"{len(set(before) & set(after))} steps matched, {total} fields: "
          + ", ".join(f"{v} {k}" for k, v in counts.items())
          + f" (within: ratio >= {1 - tol:.2f})")
    # Fields on one side only: once per field, with its number of steps.
    one_side = {}
    for l in shown:
        if l.startswith("only"):
            side, rest = l[:11].strip(), l[13:]
            field = rest.split(" = ")[0].split(" ", 2)[-1]
            one_side[(side, field)] = one_side.get((side, field), 0) + 1
    for (side, field), n in sorted(one_side.items()):
        print(f"{side:11}  {field} ({n} steps)")
    for l in shown:
        if not l.startswith("only"):
            print(l)


if __name__ == "__main__":
    try:
        main()
    except BrokenPipeError:
        pass
