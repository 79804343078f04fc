"""Self-test of the task generator: perfect answers pass, wrong ones (off by 10%, other name, dumps) fail.

Run: ``python benchmarks/taskgen/selftest.py`` (exits 1 on any problem).
"""

from __future__ import annotations

import re
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from taskgen.checks import Fmt, NamePart, NoFailPart, NumPart, extract, normalize, states
from taskgen.tasks import KINDS, UP, Task, generate


def _nums(text: str) -> list[float]:
    return [n.value for n in extract(normalize(text))]


def _states(text: str, v: float, mode: str = "float") -> bool:
    return any(states(n, v, mode) for n in extract(normalize(text)))


def unit_checks() -> list[str]:
    """The number, name and attribution rules on hand-written answers."""
    cases: list[tuple[str, bool]] = [
        ("extract 1,234.5", _nums("total: 1,234.5 units") == [1234.5]),
        ("extract negatives and dates", _nums("t = -3.2 on 2022-06-30") == [-3.2, 2022]),
        ("extract 1.2e-05", _nums("p = 1.2e-05") == [1.2e-05]),
        ("extract 1.2×10^-5", abs(_nums("p = 1.2 × 10^-5")[0] - 1.2e-5) < 1e-12),
        ("extract 1.2×10⁻⁵", abs(_nums("p = 1.2×10⁻⁵")[0] - 1.2e-5) < 1e-12),
        ("extract 12.3k", _nums("about 12.3k") == [12300.0]),
        ("extract 42.3M", abs(_nums("42.3M kWh")[0] - 42.3e6) < 1e-3),
        ("extract ignores 90th and Q1", _nums("the 90th percentile and Q1") == []),
        ("3.87 states 3.8712", _states("3.87", 3.8712)),
        ("3.9 states 3.87", _states("3.9", 3.87)),
        ("4 does not state 3.87", not _states("4", 3.87)),
        ("0.2 does not state 0.169", not _states("0.2", 0.169)),
        ("0.17 states 0.169", _states("0.17", 0.169)),
        ("**0.169** states 0.169", _states("**0.169**", 0.169)),
        ("1,234 states count 1234", _states("1,234 rows", 1234, "int")),
        ("1,235 does not state count 1234", not _states("1,235 rows", 1234, "int")),
        ("23.4% states share 0.234", _states("23.4%", 0.234, "share")),
        ("0.234 states share 0.234", _states("0.234", 0.234, "share")),
        ("0.234% does not state share 0.234", not _states("0.234%", 0.234, "share")),
        ("p < 0.001 states 4e-6", _states("p < 0.001", 4e-6, "p")),
        ("p < 0.001 does not state 0.002", not _states("p < 0.001", 0.002, "p")),
        ("0.0312 states p 0.03124", _states("p = 0.0312", 0.03124, "p")),
        ("0.03 does not state p 0.03124", not _states("p = 0.03", 0.03124, "p")),
        ("4.1e-06 states p 4.12e-6", _states("p=4.1e-06", 4.12e-6, "p")),
        ("12.3k states 12345.6", _states("12.3k", 12345.6)),
        ("Fmt percent", bool(Fmt("percent", 2).hits("23.46%", extract("23.46%"), 0.23456))),
        ("Fmt percent rejects 0.2346", not Fmt("percent", 2).hits("0.2346", extract("0.2346"), 0.23456)),
        ("Fmt template", bool(Fmt("template", 2, "median").hits("median = 9.52", extract("median = 9.52"), 9.5213))),
        ("Fmt template needs key", not Fmt("template", 2, "median").hits("9.52", extract("9.52"), 9.5213)),
    ]
    west = NamePart("top", [("West",)], [("North",), ("East",), ("South",), ("Northeast",)])
    cases += [
        ("name in bold", west.check("The top region is **West**.", {})[0]),
        ("North does not match Northeast", not west.check("Northeast", {})[0]),
        ("dump of names fails", not west.check("West 10\nNorth 9\nEast 8\nSouth 7", {})[0]),
        ("one other name is fine", west.check("West (10), ahead of North (9).", {})[0]),
    ]
    days = ["Fri", "Sat", "Sun"]
    vals = {"Fri": 0.169, "Sat": 0.153, "Sun": 0.161}

    def per_day(text: str) -> bool:
        return all(
            NumPart(d, v, near=(d,), near_others=[(o,) for o in days if o != d]).check(text, {})[0]
            for d, v in vals.items()
        )

    cases += [
        ("values in a table", per_day("| day | rate |\n|---|---|\n| Fri | 0.169 |\n| Sat | 0.153 |\n| Sun | 0.161 |")),
        (
            "values in a transposed table",
            per_day("| | Fri | Sat | Sun |\n|---|---|---|---|\n| rate | 0.169 | 0.153 | 0.161 |"),
        ),
        ("values after names in prose", per_day("Fri had 0.169, while Sat had 0.153 and Sun 0.161.")),
        ("values before names", per_day("0.169 (Fri), 0.153 (Sat), 0.161 (Sun)")),
        ("name=value pairs on one line", per_day("Fri=0.169 Sat=0.153 Sun=0.161")),
        (
            "values under headings",
            per_day("**Fri**\n- rate: 0.169\n\n**Sat**\n- rate: 0.153\n\n**Sun**\n- rate: 0.161"),
        ),
        ("swapped values fail", not per_day("Fri: 0.153, Sat: 0.169, Sun: 0.161")),
        (
            "saved but cannot display passes",
            NoFailPart().check(
                "I cannot display images here, but I saved the chart to /mnt/user-data/outputs/x.png.", {}
            )[0],
        ),
        ("unable to save fails", not NoFailPart().check("I was unable to save the chart.", {})[0]),
        ("did not need cleaning passes", NoFailPart().check("Here it is. The data did not need cleaning.", {})[0]),
        ("could not without saving fails", not NoFailPart().check("I could not find the column.", {})[0]),
    ]
    return [f"unit check failed: {name}" for name, ok in cases if not ok]


def _styles(answer: str) -> dict[str, str]:
    """The perfect answer rewritten in other formatting an agent might use."""
    lines = [ln[2:] for ln in answer.splitlines() if ln.startswith("- ")]
    rows = [ln.split(": ", 1) if ": " in ln else [ln, ""] for ln in lines]
    return {
        "bold": "\n".join(f"**{a}**: **{b}**" for a, b in rows),
        "table": "Here are the results:\n\n| item | value |\n|---|---|\n"
        + "\n".join(f"| {a} | {b} |" for a, b in rows),
        "code": "Results:\n" + "\n".join(f"* {a} = `{b}`" for a, b in rows),
        "prose": "Sure! " + " Also, ".join(f"the {a} is {b}." for a, b in rows),
    }


def check_tasks(tasks: list[Task]) -> list[str]:
    problems = []
    for t in tasks:
        assert t.kind in KINDS, t.kind
        for f in t.files:
            if not f.exists():
                problems.append(f"{t.id}: data file {f} missing")
            if f"{UP}/{f.name}" not in t.question:
                problems.append(f"{t.id}: question does not name {f.name}")
        for o in t.outputs_expected:
            if o not in t.question:
                problems.append(f"{t.id}: question does not name output {o}")
        ok, why = t.check(t.perfect, dict(t.perfect_outputs))
        if not ok:
            problems.append(f"{t.id}: perfect answer fails: {why}\n    Q: {t.question}\n    A: {t.perfect}")
        for style, text in _styles(t.perfect).items():
            ok, why = t.check(text, dict(t.perfect_outputs))
            if not ok:
                problems.append(f"{t.id}: perfect answer in {style} style fails: {why}")
        if not t.wrong_answers:
            problems.append(f"{t.id}: no wrong answers to test")
        for label, text, outs in t.wrong_answers:
            ok, _ = t.check(text, outs)
            if ok:
                problems.append(f"{t.id}: wrong answer passes ({label})\n    A: {text[:400]}")
        ok, _ = t.check("I could not do this.", {})
        if ok:
            problems.append(f"{t.id}: an empty answer passes")
    return problems


def main() -> int:
    all_problems = unit_checks()
    print(f"unit checks: {'OK' if not all_problems else 'FAILED'}")
    for seed in (0, 1):
        with tempfile.TemporaryDirectory() as d:
            t0 = time.perf_counter()
            tasks = generate(Path(d), seed)
            took = time.perf_counter() - t0
            counts = Counter(t.kind for t in tasks)
            print(
                f"seed {seed}: {len(tasks)} tasks in {took:.1f}s; multipart {counts['multipart']}, "
                f"stated format {sum(t.stated_format for t in tasks)}, "
                f"wrong answers tested {sum(len(t.wrong_answers) for t in tasks)}"
            )
            print("  " + ", ".join(f"{k}={counts[k]}" for k in KINDS))
            exts = Counter(f.suffix for t in tasks for f in t.files)
            print("  file formats used by tasks: " + ", ".join(f"{k}={v}" for k, v in sorted(exts.items())))
            problems = check_tasks(tasks)
            all_problems += [f"seed {seed}: {p}" for p in problems]
            if took > 20:
                all_problems.append(f"seed {seed}: generate() took {took:.1f}s")
            if seed == 0:
                print("\nSample questions:")
                singles = [next(t for t in tasks if t.kind == k) for k in KINDS if k != "multipart"]
                multi = [t for t in tasks if t.kind == "multipart"]
                picks = singles[1::2][:9] + [t for t in tasks if t.kind == "chart"][-1:] + multi[:15:3]
                for t in picks:
                    q = re.sub(r"\s+", " ", t.question)
                    print(f"  [{t.id}] {q}\n      expected: {t.expected[:160]}")
                print()
    for p in all_problems:
        print("PROBLEM", p)
    print("OK" if not all_problems else f"{len(all_problems)} problems")
    return 1 if all_problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
