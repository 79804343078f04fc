"""Benchmark tasks for a data-analysis agent: generated data files, varied questions, pandas/scipy/sklearn truth.

``generate(folder, seed)`` writes the data files into folder and returns about 80 ``Task``s: single-kind tasks (see
``KINDS``) and multipart ones. A task's question names its files by their upload path (/mnt/user-data/uploads/<name>);
``check(answer, outputs)`` judges the answer text and the files written under /mnt/user-data/outputs.
"""

from __future__ import annotations

import io
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .checks import (
    Checker,
    Fmt,
    ImagePart,
    NamePart,
    NoFailPart,
    NumPart,
    ReportPart,
    TablePart,
    distractor_count,
    read_table,
)

UP = "/mnt/user-data/uploads"
OUT = "/mnt/user-data/outputs"
KINDS: tuple[str, ...] = (
    "count",
    "filter",
    "spread",
    "topn",
    "share",
    "derived_group",
    "difference",
    "correlation",
    "missing",
    "duplicates",
    "outliers",
    "stat_test",
    "model",
    "join",
    "new_column",
    "chart",
    "clean_file",
    "report",
    "multipart",
)

WEEKDAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
MONTHS = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
]


@dataclass
class Task:
    id: str
    kind: str
    files: list[Path]
    question: str
    expected: str
    check: Callable[[str, dict[str, bytes | None]], tuple[bool, str]]
    outputs_expected: list[str] = field(default_factory=list)
    multipart: bool = False
    stated_format: bool = False
    perfect: str = ""  # an answer stating exactly the truth
    perfect_outputs: dict[str, bytes] = field(default_factory=dict)  # the true output files
    wrong_answers: list[tuple[str, str, dict[str, bytes | None]]] = field(default_factory=list)  # (why, text, outputs)
    parts: list[Any] = field(default_factory=list)


@dataclass
class DS:
    """A written data file with the roles of its columns, for wording and for picking questions."""

    name: str
    path: Path
    df: pd.DataFrame  # as read back from the written file
    noun: str  # what a row is, plural: "orders"
    nums: list[str] = field(default_factory=list)
    cats: list[str] = field(default_factory=list)
    date: str | None = None
    key: str | None = None
    desc: dict[str, list[str]] = field(default_factory=dict)  # column -> descriptions (bare noun phrases)
    levels: dict[str, tuple[str, str]] = field(default_factory=dict)  # category column -> (singular, plural)
    sums: list[str] = field(default_factory=list)  # columns whose totals make sense

    @property
    def vpath(self) -> str:
        return f"{UP}/{self.name}"


@dataclass
class Spec:
    """One question's content: full wording, a clause for multipart wording, and its checked parts."""

    kind: str
    question: str
    clause: str
    parts: list[Any]
    files: list[Path]
    outputs: list[str] = field(default_factory=list)
    dump: str | None = None
    stated: bool = False
    action: bool = False  # clause is an imperative (save/plot ...) rather than something to tell


class Ctx:
    def __init__(self, folder: Path, seed: int):
        self.folder = folder
        self.seed = seed
        self.rng = np.random.default_rng(seed)
        self.variant = 0
        self.ds: dict[str, DS] = {}

    def choice(self, seq: Any) -> Any:
        seq = list(seq)
        return seq[int(self.rng.integers(len(seq)))]

    def tpl(self, options: list[str]) -> str:
        return options[(self.variant + self.seed) % len(options)]


# ---------------------------------------------------------------------------------------------------------------------
# files


def _write(df: pd.DataFrame, path: Path) -> None:
    ext = path.suffix.lower()
    if ext == ".tsv":
        df.to_csv(path, index=False, sep="\t")
    elif ext == ".xlsx":
        df.to_excel(path, index=False)
    elif ext == ".parquet":
        df.to_parquet(path, index=False)
    elif ext == ".jsonl":
        df.to_json(path, orient="records", lines=True, date_format="iso")
    else:
        df.to_csv(path, index=False)


def _save(c: Ctx, name: str, df: pd.DataFrame, noun: str, **meta: Any) -> DS:
    path = c.folder / name
    _write(df, path)
    ds = DS(name, path, read_table(path.read_bytes(), name), noun, **meta)
    c.ds[name] = ds
    return ds


def _chart(draw: Callable[[Any], Any], fmt: str = "png") -> bytes:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 3.5), dpi=80)
    draw(ax)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format=fmt)
    plt.close(fig)
    return buf.getvalue()


# ---------------------------------------------------------------------------------------------------------------------
# data sets


def _dates(start: str, days: np.ndarray) -> pd.DatetimeIndex:
    return pd.Timestamp(start) + pd.to_timedelta(days, "D")


def _pick(rng: np.random.Generator, levels: list[str], n: int) -> np.ndarray:
    """Draw n category levels with uneven, random weights (no near-ties between the groups' shares)."""
    w = np.sort(rng.dirichlet(np.full(len(levels), 4.0)))[::-1] + np.linspace(0.06, 0.0, len(levels))
    return rng.choice(levels, n, p=rng.permutation(w / w.sum()))


def _z_robust(
    rng: np.random.Generator, n: int, mean: float, sd: float, k: int, thr: float, up_only: bool
) -> np.ndarray:
    """Normal data with k clear outliers; |z| > thr counts agree for ddof=1 and ddof=0 with a margin."""
    for _ in range(200):
        x = rng.normal(mean, sd, n)
        bad = np.abs(x - mean) > 2.2 * sd
        x[bad] = rng.uniform(mean - 1.8 * sd, mean + 1.8 * sd, bad.sum())
        idx = rng.choice(n, k, replace=False)
        sign = np.ones(k) if up_only else rng.choice([-1.0, 1.0], k)
        x[idx] = mean + sign * rng.uniform(thr + 1.6, thr + 5, k) * sd
        x = x.round(3)
        s = pd.Series(x)
        z1 = ((s - s.mean()) / s.std()).abs()
        z0 = ((s - s.mean()) / s.std(ddof=0)).abs()
        if (z1 > thr).sum() == (z0 > thr).sum() and not ((z1 > thr - 0.2) & (z1 < thr + 0.2)).any():
            return x
    raise RuntimeError("no robust z-score sample")


def _iqr_margin(x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Move values that sit near the 1.5*IQR fences away from them, so every quantile method counts alike."""
    s = pd.Series(x)
    q1, q3 = s.quantile(0.25), s.quantile(0.75)
    iqr = q3 - q1
    lo, hi, band = q1 - 1.5 * iqr, q3 + 1.5 * iqr, 0.03 * iqr
    x = x.copy()
    m = np.abs(x - hi) < band
    x[m] = hi - band * (1.2 + rng.random(m.sum()))
    m = np.abs(x - lo) < band
    x[m] = lo + band * (1.2 + rng.random(m.sum()))
    return x


def _iqr_count(s: pd.Series) -> int | None:
    """Outliers by the 1.5*IQR rule, or None when quantile interpolation methods disagree."""
    counts = set()
    for method in ("linear", "lower", "higher", "midpoint", "nearest"):
        q1, q3 = s.quantile(0.25, interpolation=method), s.quantile(0.75, interpolation=method)
        iqr = q3 - q1
        counts.add(int(((s < q1 - 1.5 * iqr) | (s > q3 + 1.5 * iqr)).sum()))
    return counts.pop() if len(counts) == 1 else None


def build_datasets(c: Ctx) -> None:
    rng = c.rng

    # sales.csv: orders of office products, two years
    prods = {
        "Desk Lamp": (24, 11, 1.4),
        "Office Chair": (189, 96, 0.55),
        "Monitor": (229, 150, 0.7),
        "Keyboard": (49, 21, 1.2),
        "Mouse": (19, 7, 1.5),
        "Webcam": (69, 33, 0.9),
        "Headset": (89, 41, 1.0),
        "Docking Station": (159, 88, 0.45),
    }
    n = 2400
    names = list(prods)
    w = np.array([prods[p][2] for p in names])
    product = rng.choice(names, n, p=w / w.sum())
    day = np.sort(rng.integers(0, 730, n))
    date = _dates("2022-01-01", day)
    qty = rng.integers(1, 9, n) + (date.month >= 11) * rng.integers(0, 5, n)
    price = np.array([prods[p][0] for p in product]) * np.where(day >= 365, 1.06, 1.0) * rng.normal(1, 0.04, n)
    cost = np.array([prods[p][1] for p in product]) * rng.normal(1, 0.03, n)
    regions = ["North", "South", "East", "West", "Central", "Northeast"]
    df = pd.DataFrame(
        {
            "order_id": np.arange(10001, 10001 + n),
            "order_date": date.strftime("%Y-%m-%d"),
            "region": rng.choice(regions, n, p=[0.2, 0.15, 0.18, 0.22, 0.1, 0.15]),
            "product": product,
            "quantity": qty,
            "unit_price": price.round(2),
            "unit_cost": cost.round(2),
        }
    )
    _save(
        c,
        "sales.csv",
        df,
        "orders",
        nums=["quantity", "unit_price", "unit_cost"],
        cats=["region", "product"],
        date="order_date",
        key="order_id",
        desc={
            "unit_price": ["unit price", "price per unit"],
            "quantity": ["number of units ordered"],
            "unit_cost": ["unit cost"],
        },
        levels={"region": ("region", "regions"), "product": ("product", "products")},
        sums=["quantity"],
    )

    # tips.csv: restaurant bills
    n = 244
    day_s = rng.choice(["Thur", "Fri", "Sat", "Sun"], n, p=[0.25, 0.08, 0.36, 0.31])
    size = rng.choice([1, 2, 3, 4, 5, 6], n, p=[0.03, 0.62, 0.15, 0.14, 0.03, 0.03])
    bill = (rng.gamma(4, 3.4, n) + size * 2.6).round(2)
    rate = pd.Series(day_s).map({"Thur": 0.158, "Fri": 0.176, "Sat": 0.146, "Sun": 0.165}).to_numpy()
    smoker = rng.choice(["Yes", "No"], n, p=[0.38, 0.62])
    rate = rate + rng.normal(0, 0.035, n) - 0.022 * (smoker == "Yes")
    df = pd.DataFrame(
        {
            "bill_id": np.arange(1, n + 1),
            "total_bill": bill,
            "tip": np.maximum(bill * rate, 1.0).round(2),
            "sex": rng.choice(["Female", "Male"], n),
            "smoker": smoker,
            "day": day_s,
            "time": np.where(np.isin(day_s, ["Sat", "Sun"]), "Dinner", rng.choice(["Lunch", "Dinner"], n)),
            "size": size,
        }
    )
    _save(
        c,
        "tips.csv",
        df,
        "bills",
        nums=["total_bill", "tip", "size"],
        cats=["day", "sex", "smoker", "time"],
        key="bill_id",
        desc={"total_bill": ["bill total", "total bill amount"], "tip": ["tip amount", "tip"], "size": ["party size"]},
        levels={
            "day": ("day", "days"),
            "sex": ("sex", "sexes"),
            "smoker": ("smoker group", "smoker groups"),
            "time": ("meal time", "meal times"),
        },
        sums=["total_bill", "tip"],
    )

    # weather_stations.tsv: daily readings of five stations, some gaps
    stations = {"Harbor Point": 1.5, "Hill Top": -2.8, "Airport": 0.4, "Riverside": 0.9, "Old Town": 2.1}
    days = pd.date_range("2023-01-01", "2023-12-31", freq="D")
    rows = []
    for st, off in stations.items():
        doy = days.day_of_year.to_numpy()
        temp = 9 + off + 9 * np.sin((doy - 110) / 365 * 2 * np.pi) + rng.normal(0, 2.6, len(days))
        precip = np.where(rng.random(len(days)) < 0.42, rng.exponential(5.5, len(days)), 0.0)
        rows.append(
            pd.DataFrame(
                {
                    "Station": st,
                    "Date": days.strftime("%Y-%m-%d"),
                    "Temp (C)": temp.round(1),
                    "Humidity (%)": np.clip(rng.normal(74, 11, len(days)), 25, 100).round(0),
                    "Wind Speed (km/h)": rng.gamma(3, 4.2 + (st == "Airport") * 1.5, len(days)).round(1),
                    "Precip (mm)": precip.round(1),
                }
            )
        )
    df = pd.concat(rows, ignore_index=True)
    for col, frac in (("Temp (C)", 0.031), ("Humidity (%)", 0.017), ("Precip (mm)", 0.006)):
        df.loc[rng.random(len(df)) < frac, col] = np.nan
    _save(
        c,
        "weather_stations.tsv",
        df,
        "daily readings",
        nums=["Temp (C)", "Humidity (%)", "Wind Speed (km/h)", "Precip (mm)"],
        cats=["Station"],
        date="Date",
        desc={
            "Temp (C)": ["temperature", "daily temperature in °C"],
            "Humidity (%)": ["relative humidity"],
            "Wind Speed (km/h)": ["wind speed"],
            "Precip (mm)": ["precipitation", "rainfall in mm"],
        },
        levels={"Station": ("station", "stations")},
        sums=["Precip (mm)"],
    )

    # employees.xlsx: HR table
    n = 320
    depts = {
        "Engineering": 98000,
        "Sales": 71000,
        "Marketing": 76000,
        "Finance": 84000,
        "Human Resources": 66000,
        "Customer Support": 52000,
        "Legal": 105000,
    }
    dept = rng.choice(list(depts), n, p=[0.28, 0.2, 0.12, 0.1, 0.07, 0.17, 0.06])
    level = rng.choice(["Junior", "Mid", "Senior", "Lead"], n, p=[0.3, 0.35, 0.25, 0.1])
    mult = pd.Series(level).map({"Junior": 0.72, "Mid": 0.95, "Senior": 1.22, "Lead": 1.5}).to_numpy()
    sal = np.array([depts[d] for d in dept]) * mult * rng.normal(1, 0.08, n)
    df = pd.DataFrame(
        {
            "EmployeeID": [f"E{1001 + i}" for i in range(n)],
            "Department": dept,
            "JobLevel": level,
            "HireDate": _dates("2012-01-01", rng.integers(0, 4560, n)),
            "Salary": (sal / 100).round() * 100,
            "Age": rng.integers(22, 64, n),
            "Gender": rng.choice(["Female", "Male"], n),
            "PerformanceScore": rng.choice([1, 2, 3, 4, 5], n, p=[0.05, 0.15, 0.4, 0.3, 0.1]),
            "RemoteWorker": rng.random(n) < 0.35,
        }
    )
    _save(
        c,
        "employees.xlsx",
        df,
        "employees",
        nums=["Salary", "Age", "PerformanceScore"],
        cats=["Department", "JobLevel"],
        date="HireDate",
        key="EmployeeID",
        desc={"Salary": ["salary", "annual salary"], "Age": ["employee age"], "HireDate": ["hire date"]},
        levels={"Department": ("department", "departments"), "JobLevel": ("job level", "job levels")},
        sums=["Salary"],
    )

    # sensor_readings.parquet: 50,000 machine readings, vibration spikes
    n = 50000
    sensor = _pick(rng, [f"S-{i:02d}" for i in range(1, 13)], n)
    offsets = {f"S-{i:02d}": v for i, v in enumerate(rng.normal(0, 1.5, 13))}
    ts = pd.Timestamp("2023-03-01") + pd.to_timedelta(np.sort(rng.integers(0, 60 * 24 * 30, n)), "min")
    df = pd.DataFrame(
        {
            "reading_id": np.arange(1, n + 1),
            "sensor_id": sensor,
            "timestamp": ts.strftime("%Y-%m-%d %H:%M:%S"),
            "temperature": (41 + pd.Series(sensor).map(offsets).to_numpy() + rng.normal(0, 2.5, n)).round(2),
            "vibration": _z_robust(rng, n, 2.0, 0.3, 43, 3.0, True),
            "pressure": rng.normal(101.3, 0.8, n).round(3),
            "status": rng.choice(["ok", "warn", "fault"], n, p=[0.93, 0.055, 0.015]),
        }
    )
    _save(
        c,
        "sensor_readings.parquet",
        df,
        "readings",
        nums=["temperature", "vibration", "pressure"],
        cats=["sensor_id", "status"],
        key="reading_id",
        desc={"temperature": ["temperature reading"], "vibration": ["vibration level"], "pressure": ["pressure"]},
        levels={"sensor_id": ("sensor", "sensors"), "status": ("status", "statuses")},
    )

    # students.csv: scores and study habits
    n = 400
    hours = rng.gamma(3, 2.2, n).clip(0, 25).round(1)
    att = np.clip(rng.normal(88, 8, n), 50, 100).round(1)
    math_s = np.clip(48 + 2.1 * hours + 0.15 * (att - 88) + rng.normal(0, 9, n), 0, 100).round()
    read_s = np.clip(0.55 * math_s + 32 + rng.normal(0, 8, n), 0, 100).round()
    write_s = np.clip(0.8 * read_s + 14 + rng.normal(0, 6, n), 0, 100).round()
    logit = 0.09 * (math_s - 62) + 0.06 * (read_s - 65) + 0.08 * (att - 88) + rng.normal(0, 0.8, n)
    df = pd.DataFrame(
        {
            "student_id": [f"ST{i:04d}" for i in range(1, n + 1)],
            "homeroom": _pick(rng, ["Ash", "Birch", "Cedar", "Maple", "Oak", "Pine"], n),
            "math_score": math_s,
            "reading_score": read_s,
            "writing_score": write_s,
            "hours_studied": hours,
            "attendance_pct": att,
            "passed": np.where(logit > 0, "yes", "no"),
        }
    )
    _save(
        c,
        "students.csv",
        df,
        "students",
        nums=["math_score", "reading_score", "writing_score", "hours_studied", "attendance_pct"],
        cats=["homeroom", "passed"],
        key="student_id",
        desc={
            "math_score": ["math score"],
            "reading_score": ["reading score"],
            "writing_score": ["writing score"],
            "hours_studied": ["hours studied", "weekly study hours"],
            "attendance_pct": ["attendance percentage"],
        },
        levels={"homeroom": ("homeroom", "homerooms"), "passed": ("pass status", "pass statuses")},
    )

    # web_sessions.jsonl: website sessions, Jan-Mar 2024
    n = 6000
    secs = rng.integers(0, 91 * 24 * 3600, n * 2)
    start = pd.Timestamp("2024-01-01") + pd.to_timedelta(secs, "s")
    keep = rng.random(n * 2) < np.array([1.0, 0.93, 0.97, 0.86, 0.78, 0.52, 0.45])[start.day_of_week]
    start = start[keep][:n].sort_values()
    pages = ["/home", "/pricing", "/docs", "/blog", "/signup", "/about"]
    page = rng.choice(pages, n, p=[0.34, 0.16, 0.2, 0.17, 0.06, 0.07])
    dur = rng.gamma(2, 1.0, n) * pd.Series(page).map(dict(zip(pages, [55, 95, 210, 160, 70, 40], strict=True)))
    source = rng.choice(
        ["Organic Search", "Direct", "Social", "Email", "Referral", "Paid Search"],
        n,
        p=[0.36, 0.22, 0.14, 0.09, 0.07, 0.12],
    )
    conv = rng.random(n) < (
        0.03 + 0.06 * (page == "/pricing") + 0.11 * (page == "/signup") + 0.03 * (source == "Email")
    )
    countries = [
        "United States",
        "Germany",
        "India",
        "Brazil",
        "United Kingdom",
        "France",
        "Japan",
        "Canada",
        "Spain",
        "Mexico",
        "Australia",
        "Nigeria",
        "Poland",
    ]
    df = pd.DataFrame(
        {
            "sessionId": [f"s{i:06d}" for i in range(1, n + 1)],
            "startTime": start.strftime("%Y-%m-%d %H:%M:%S"),
            "landingPage": page,
            "trafficSource": source,
            "country": _pick(rng, countries, n),
            "pageViews": 1
            + rng.poisson(pd.Series(page).map(dict(zip(pages, [2.2, 1.5, 3.4, 1.8, 1.1, 0.7], strict=True)))),
            "durationSec": dur.round().astype(int),
            "converted": conv,
        }
    )
    _save(
        c,
        "web_sessions.jsonl",
        df,
        "sessions",
        nums=["pageViews", "durationSec"],
        cats=["landingPage", "trafficSource", "country"],
        date="startTime",
        key="sessionId",
        desc={
            "durationSec": ["session duration in seconds", "time on site (seconds)"],
            "pageViews": ["pages viewed per session"],
        },
        levels={
            "landingPage": ("landing page", "landing pages"),
            "trafficSource": ("traffic source", "traffic sources"),
            "country": ("country", "countries"),
        },
        sums=["pageViews", "durationSec"],
    )

    # flights_2022.csv and airports.csv
    n = 20000
    airports = pd.DataFrame(
        {
            "code": ["JFK", "LAX", "ORD", "ATL", "DFW", "SFO", "SEA", "BOS"],
            "city": ["New York", "Los Angeles", "Chicago", "Atlanta", "Dallas", "San Francisco", "Seattle", "Boston"],
            "state": [
                "New York",
                "California",
                "Illinois",
                "Georgia",
                "Texas",
                "California",
                "Washington",
                "Massachusetts",
            ],
            "hub_size": ["large", "large", "large", "large", "large", "medium", "medium", "medium"],
        }
    )
    codes = airports.code.tolist()
    origin = rng.choice(codes, n, p=[0.16, 0.15, 0.15, 0.14, 0.12, 0.1, 0.09, 0.09])
    dest = rng.choice(codes, n)
    same = origin == dest
    dest[same] = np.array(codes)[(np.array([codes.index(o) for o in origin[same]]) + 3) % len(codes)]
    dist_m = {(a, b): int(rng.integers(300, 2700)) for a in codes for b in codes}
    distance = np.array([dist_m[tuple(sorted((a, b)))] for a, b in zip(origin, dest, strict=True)])
    hub = pd.Series(origin).map({"JFK": 9, "ORD": 7, "SFO": 5, "ATL": 3, "BOS": 4}).fillna(0).to_numpy()
    dep = (rng.gamma(1.1, 15, n) - 9 + hub).round()
    arr = (dep + rng.normal(-4, 9, n)).round()
    air = (distance / 7.7 + rng.normal(0, 8, n)).round()
    cancel = rng.random(n) < 0.021
    divert = ~cancel & (rng.random(n) < 0.005)
    dep[cancel] = np.nan
    arr[cancel | divert] = np.nan
    air[cancel] = np.nan
    df = pd.DataFrame(
        {
            "flight_id": np.arange(1, n + 1),
            "date": _dates("2022-01-01", np.sort(rng.integers(0, 365, n))).strftime("%Y-%m-%d"),
            "carrier": _pick(rng, ["AA", "DL", "UA", "WN", "B6", "AS"], n),
            "origin": origin,
            "dest": dest,
            "dep_delay": dep,
            "arr_delay": arr,
            "air_time": air,
            "distance": distance,
        }
    )
    _save(
        c,
        "flights_2022.csv",
        df,
        "flights",
        nums=["dep_delay", "arr_delay", "air_time", "distance"],
        cats=["carrier", "origin"],
        date="date",
        key="flight_id",
        desc={
            "dep_delay": ["departure delay (minutes)"],
            "arr_delay": ["arrival delay (minutes)"],
            "distance": ["flight distance"],
            "air_time": ["air time"],
        },
        levels={"carrier": ("carrier", "carriers"), "origin": ("origin airport", "origin airports")},
        sums=["distance"],
    )
    _save(c, "airports.csv", airports, "airports", key="code")

    # hospital_visits.xlsx and patients.csv
    n = 1500
    npat = 600
    pat = pd.DataFrame(
        {
            "Patient ID": [f"P{i:04d}" for i in range(1, npat + 1)],
            "Insurance": rng.choice(["Medicare", "Medicaid", "Private", "Uninsured"], npat, p=[0.3, 0.22, 0.4, 0.08]),
            "Sex": rng.choice(["F", "M"], npat),
            "Birth Year": rng.integers(1930, 2020, npat),
        }
    )
    dept_cost = {
        "Cardiology": 9200,
        "Oncology": 12800,
        "Orthopedics": 8100,
        "Pediatrics": 4200,
        "Emergency": 3600,
        "Neurology": 7600,
    }
    dep_h = rng.choice(list(dept_cost), n, p=[0.18, 0.12, 0.16, 0.14, 0.28, 0.12])
    los = np.maximum(1, rng.gamma(1.8, 2.2, n).round()).astype(int)
    pid = rng.choice(pat["Patient ID"], n)
    ins_f = (
        pd.Series(pid)
        .map(pat.set_index("Patient ID").Insurance)
        .map({"Medicare": 1.12, "Medicaid": 0.86, "Private": 1.0, "Uninsured": 0.74})
        .to_numpy()
    )
    cost = np.array([dept_cost[d] for d in dep_h]) * (0.6 + 0.13 * los) * ins_f * rng.lognormal(0, 0.35, n)
    spikes = rng.choice(n, 28, replace=False)
    cost[spikes] *= rng.uniform(3, 6, 28)
    df = pd.DataFrame(
        {
            "Visit ID": np.arange(50001, 50001 + n),
            "Patient ID": pid,
            "Admit Date": _dates("2021-01-01", np.sort(rng.integers(0, 1095, n))),
            "Department": dep_h,
            "Length of Stay": los,
            "Total Cost": _iqr_margin(cost, rng).round(2),
            "Age": np.where(dep_h == "Pediatrics", rng.integers(0, 18, n), rng.integers(18, 96, n)),
            "Readmitted": rng.choice(["Yes", "No"], n, p=[0.14, 0.86]),
        }
    )
    _save(
        c,
        "hospital_visits.xlsx",
        df,
        "visits",
        nums=["Length of Stay", "Total Cost", "Age"],
        cats=["Department", "Readmitted"],
        date="Admit Date",
        key="Visit ID",
        desc={
            "Total Cost": ["total cost", "cost of the visit"],
            "Length of Stay": ["length of stay (days)"],
            "Age": ["patient age"],
        },
        levels={"Department": ("department", "departments"), "Readmitted": ("readmission flag", "readmission flags")},
        sums=["Total Cost", "Length of Stay"],
    )
    _save(c, "patients.csv", pat, "patients", key="Patient ID")

    # building_energy.parquet: monthly kWh of 40 buildings, 2021-2023
    types = {
        "Office": (95, 1.03),
        "School": (70, 0.95),
        "Retail": (120, 1.08),
        "Warehouse": (45, 0.99),
        "Hospital": (210, 1.05),
    }
    b_type = rng.choice(list(types), 40)
    area = rng.integers(800, 12000, 40)
    months = pd.date_range("2021-01-01", "2023-12-01", freq="MS")
    rows = []
    for i in range(40):
        temp = 11 + 11 * np.sin((months.month.to_numpy() - 4) / 12 * 2 * np.pi) + rng.normal(0, 1.8, len(months))
        yf = np.where(months.year == 2021, 1.0, np.where(months.year == 2022, 1.04, 1.04 * types[b_type[i]][1]))
        kwh = (
            area[i] * types[b_type[i]][0] / 12 * (1 + 0.035 * np.abs(temp - 17)) * yf * rng.normal(1, 0.05, len(months))
        )
        rows.append(
            pd.DataFrame(
                {
                    "building_id": f"B{i + 1:02d}",
                    "building_type": b_type[i],
                    "month": months,
                    "kwh": kwh.round(1),
                    "avg_temp_c": temp.round(1),
                    "floor_area_m2": area[i],
                }
            )
        )
    _save(
        c,
        "building_energy.parquet",
        pd.concat(rows, ignore_index=True),
        "monthly meter readings",
        nums=["kwh", "avg_temp_c", "floor_area_m2"],
        cats=["building_type"],
        date="month",
        desc={
            "kwh": ["energy use (kWh)", "electricity consumption in kWh"],
            "avg_temp_c": ["average outdoor temperature"],
            "floor_area_m2": ["floor area"],
        },
        levels={"building_type": ("building type", "building types")},
        sums=["kwh"],
    )

    # orders.jsonl and customers.csv
    ncus = 600
    cus = pd.DataFrame(
        {
            "customer_id": [f"C{i:04d}" for i in range(1, ncus + 1)],
            "segment": rng.choice(
                ["Consumer", "Small Business", "Enterprise", "Education"], ncus, p=[0.5, 0.25, 0.12, 0.13]
            ),
            "country": rng.choice(["US", "Canada", "Germany", "France", "Japan", "Brazil"], ncus),
            "signup_date": _dates("2020-01-01", rng.integers(0, 1400, ncus)).strftime("%Y-%m-%d"),
        }
    )
    n = 4000
    cid = rng.choice(cus.customer_id[: int(ncus * 0.9)], n)
    seg_f = (
        pd.Series(cid)
        .map(cus.set_index("customer_id").segment)
        .map({"Consumer": 1.0, "Small Business": 2.2, "Enterprise": 4.5, "Education": 1.6})
        .to_numpy()
    )
    ts = pd.Timestamp("2023-01-01") + pd.to_timedelta(np.sort(rng.integers(0, 365 * 24 * 3600, n)), "s")
    df = pd.DataFrame(
        {
            "order_id": np.arange(700001, 700001 + n),
            "customer_id": cid,
            "order_ts": ts.strftime("%Y-%m-%dT%H:%M:%S"),
            "amount_paid": (rng.lognormal(3.6, 0.6, n) * seg_f).round(2),
            "items": rng.integers(1, 9, n),
            "channel": rng.choice(["web", "app", "phone"], n, p=[0.55, 0.35, 0.1]),
        }
    )
    _save(
        c,
        "orders.jsonl",
        df,
        "orders",
        nums=["amount_paid", "items"],
        cats=["channel"],
        date="order_ts",
        key="order_id",
        desc={
            "amount_paid": ["amount customers paid", "amount paid per order"],
            "items": ["number of items per order"],
        },
        levels={"channel": ("sales channel", "sales channels"), "customer_id": ("customer", "customers")},
        sums=["amount_paid", "items"],
    )
    _save(c, "customers.csv", cus, "customers", key="customer_id")

    # listings.tsv: real estate
    n = 900
    cities = {
        "New York": 1150,
        "Los Angeles": 720,
        "San Diego": 610,
        "Chicago": 330,
        "Austin": 410,
        "Seattle": 560,
        "Boston": 690,
    }
    city = rng.choice(list(cities), n, p=[0.2, 0.17, 0.12, 0.15, 0.12, 0.12, 0.12])
    sqft = rng.integers(420, 4300, n)
    sqft[np.isin(sqft, [1000, 1500, 2500])] += 7
    beds = np.clip((sqft / 650 + rng.normal(0, 0.7, n)).round(), 1, 6).astype(int)
    price = np.array([cities[x] for x in city]) * sqft * rng.lognormal(0, 0.14, n) + beds * 15000
    df = pd.DataFrame(
        {
            "Listing ID": [f"LST-{i:05d}" for i in range(1, n + 1)],
            "City": city,
            "Bedrooms": beds,
            "Bathrooms": np.clip(beds - rng.integers(0, 2, n), 1, 5),
            "Sqft": sqft,
            "Price": (price / 100).round() * 100,
            "Year Built": rng.integers(1920, 2024, n),
            "Days on Market": rng.integers(3, 180, n),
        }
    )
    _save(
        c,
        "listings.tsv",
        df,
        "listings",
        nums=["Price", "Sqft", "Bedrooms", "Days on Market"],
        cats=["City"],
        key="Listing ID",
        desc={
            "Price": ["asking price", "listing price"],
            "Sqft": ["floor area in square feet"],
            "Days on Market": ["days on market"],
        },
        levels={"City": ("city", "cities"), "Listing ID": ("listing", "listings")},
    )

    # player_stats.csv and teams.csv
    teams = pd.DataFrame(
        {
            "team": [
                "Harbor Hawks",
                "Metro Meteors",
                "Valley Vipers",
                "Coastal Cranes",
                "Summit Bears",
                "River Otters",
                "Desert Foxes",
                "Prairie Wolves",
            ],
            "conference": ["East", "East", "West", "East", "West", "East", "West", "West"],
            "home_city": ["Portland", "Newark", "Fresno", "Norfolk", "Denver", "Albany", "Tucson", "Omaha"],
        }
    )
    surnames = [
        "Okafor",
        "Lindqvist",
        "Moreno",
        "Tanaka",
        "Kowalski",
        "Haddad",
        "Fischer",
        "Adeyemi",
        "Novak",
        "Brennan",
        "Castillo",
        "Iverson",
        "Sato",
        "Mensah",
        "Duarte",
        "Petrov",
        "Quinn",
        "Rahman",
        "Silva",
        "Walsh",
        "Yilmaz",
        "Zhou",
        "Baptiste",
        "Eriksen",
        "Grant",
        "Holloway",
        "Ibarra",
        "Jensen",
        "Kaur",
        "Laine",
        "Mbeki",
        "Nakamura",
        "Oduya",
        "Park",
        "Reyes",
        "Sokolov",
        "Thorne",
        "Ueda",
        "Vance",
        "Wiley",
    ]
    letters = list("ABCDEFGHJKLMNPRSTW")
    combos = [f"{a}. {s}" for a in letters for s in surnames]
    players = [combos[i] for i in rng.choice(len(combos), 160, replace=False)]
    pteam = rng.choice(teams.team, 160)
    skill = rng.gamma(2.5, 4, 160)
    rows = []
    for season in (2021, 2022, 2023):
        games = rng.integers(38, 83, 160)
        mpg = np.clip(12 + skill * 1.1 + rng.normal(0, 3, 160), 6, 38)
        rows.append(
            pd.DataFrame(
                {
                    "player": players,
                    "team": pteam,
                    "season": season,
                    "games": games,
                    "minutes": (mpg * games).round(),
                    "points": (games * np.clip(0.45 * mpg + rng.normal(0, 2.5, 160), 0.5, None)).round(),
                    "assists": (games * rng.gamma(1.5, 1.3, 160)).round(),
                    "rebounds": (games * rng.gamma(2, 1.7, 160)).round(),
                }
            )
        )
    _save(
        c,
        "player_stats.csv",
        pd.concat(rows, ignore_index=True),
        "player-seasons",
        nums=["points", "assists", "rebounds", "minutes", "games"],
        cats=["team"],
        desc={"points": ["points scored"], "minutes": ["minutes played"], "rebounds": ["rebounds"]},
        levels={"team": ("team", "teams")},
        sums=["points", "assists", "rebounds", "minutes"],
    )
    _save(c, "teams.csv", teams, "teams", key="team")

    # products.xlsx
    n = 120
    cats_p = {
        "Electronics": (180, 0.62),
        "Home & Kitchen": (45, 0.55),
        "Toys": (28, 0.5),
        "Sports": (60, 0.58),
        "Beauty": (22, 0.4),
        "Books": (16, 0.7),
    }
    cat = rng.choice(list(cats_p), n)
    up = np.array([cats_p[x][0] for x in cat]) * rng.lognormal(0, 0.45, n)
    uc = up * np.array([cats_p[x][1] for x in cat]) * rng.normal(1, 0.08, n)
    df = pd.DataFrame(
        {
            "SKU": [f"SKU-{1001 + i}" for i in range(n)],
            "Category": cat,
            "Unit Price": up.round(2),
            "Unit Cost": uc.round(2),
            "Stock": rng.integers(0, 240, n),
            "Supplier": _pick(rng, ["Acme Corp", "Globex", "Initech", "Umbrella Ltd", "Stark Supply"], n),
        }
    )
    _save(
        c,
        "products.xlsx",
        df,
        "products",
        nums=["Unit Price", "Unit Cost", "Stock"],
        cats=["Category", "Supplier"],
        key="SKU",
        desc={"Unit Price": ["unit price", "selling price"], "Unit Cost": ["unit cost"], "Stock": ["units in stock"]},
        levels={"Category": ("category", "categories"), "Supplier": ("supplier", "suppliers")},
        sums=["Stock"],
    )

    # survey_responses.csv
    n = 600
    plan = rng.choice(["Basic", "Pro", "Enterprise"], n, p=[0.5, 0.35, 0.15])
    p_rec = pd.Series(plan).map({"Basic": 0.52, "Pro": 0.66, "Enterprise": 0.74}).to_numpy()
    df = pd.DataFrame(
        {
            "respondent_id": np.arange(1, n + 1),
            "age": rng.integers(18, 80, n),
            "region": _pick(rng, ["Americas", "Europe", "Asia Pacific", "Middle East", "Africa"], n),
            "plan": plan,
            "satisfaction": np.clip((rng.normal(3.3, 1.0, n) + (plan == "Enterprise") * 0.5).round(), 1, 5),
            "would_recommend": np.where(rng.random(n) < p_rec, "Yes", "No"),
        }
    )
    _save(
        c,
        "survey_responses.csv",
        df,
        "respondents",
        nums=["age", "satisfaction"],
        cats=["region", "plan"],
        key="respondent_id",
        desc={"satisfaction": ["satisfaction score"], "age": ["respondent age"]},
        levels={"region": ("region", "regions"), "plan": ("plan", "plans")},
    )

    # bp_trial.csv: small paired trial
    n = 60
    arm = np.repeat(["control", "treatment"], 30)
    before = rng.normal(148, 11, n).round()
    after = (before - np.where(arm == "treatment", 9, 2) + rng.normal(0, 6, n)).round()
    df = pd.DataFrame(
        {"patient_id": [f"T{i:02d}" for i in range(1, n + 1)], "arm": arm, "bp_before": before, "bp_after": after}
    )
    _save(c, "bp_trial.csv", df, "patients", nums=["bp_before", "bp_after"], cats=["arm"], key="patient_id")

    # ad_spend.csv: 24 weeks
    n = 24
    tv = rng.uniform(5, 60, n).round(1)
    online = rng.uniform(2, 30, n).round(1)
    df = pd.DataFrame(
        {
            "week": pd.date_range("2023-01-02", periods=n, freq="7D").strftime("%Y-%m-%d"),
            "tv_spend": tv,
            "online_spend": online,
            "sales": (120 + 3.1 * tv + 1.4 * online + rng.normal(0, 14, n)).round(1),
        }
    )
    _save(
        c,
        "ad_spend.csv",
        df,
        "weeks",
        nums=["tv_spend", "online_spend", "sales"],
        key="week",
        desc={"tv_spend": ["TV spend"], "sales": ["weekly sales"]},
    )

    # contacts.csv: CRM export with duplicates
    n = 480
    first = [
        "Ana",
        "Ben",
        "Chloe",
        "Dev",
        "Elif",
        "Farid",
        "Grace",
        "Hugo",
        "Ines",
        "Jonas",
        "Kira",
        "Liam",
        "Maya",
        "Noah",
        "Olga",
        "Pedro",
        "Quinn",
        "Rosa",
        "Sami",
        "Tara",
    ]
    last = ["Berg", "Costa", "Diaz", "Evans", "Frost", "Gupta", "Hale", "Ito", "Jung", "Klein", "Lopez", "Meyer"]
    fn, ln = rng.choice(first, n), rng.choice(last, n)
    df = pd.DataFrame(
        {
            "contact_id": np.arange(1, n + 1),
            "full_name": [f"{a} {b}" for a, b in zip(fn, ln, strict=True)],
            "email": [f"{a.lower()}.{b.lower()}{i}@example.com" for i, (a, b) in enumerate(zip(fn, ln, strict=True))],
            "city": _pick(rng, ["Lisbon", "Porto", "Madrid", "Lyon", "Milan", "Munich"], n),
            "signup_date": _dates("2021-01-01", rng.integers(0, 1000, n)).strftime("%Y-%m-%d"),
            "plan": rng.choice(["free", "basic", "premium"], n, p=[0.5, 0.35, 0.15]),
        }
    )
    df.loc[rng.random(n) < 0.04, "city"] = np.nan
    again = df.iloc[rng.choice(n, 31, replace=False)].copy()
    again["contact_id"] = np.arange(n + 1, n + 32)
    again["plan"] = rng.choice(["free", "basic", "premium"], 31)
    exact = df.iloc[rng.choice(n, 22, replace=False)]
    df = pd.concat([df, again, exact], ignore_index=True).sample(frac=1, random_state=int(rng.integers(1 << 30)))
    _save(
        c,
        "contacts.csv",
        df,
        "contacts",
        cats=["city", "plan"],
        date="signup_date",
        key="contact_id",
        levels={"city": ("city", "cities"), "plan": ("plan", "plans")},
    )

    # taxi_trips.parquet: 50,000 trips
    n = 50000
    dist = rng.gamma(1.6, 2.0, n).round(2) + 0.1
    fare = _iqr_margin(3.0 + 2.4 * dist + rng.normal(0, 1.2, n).clip(-2, None), rng).round(2)
    pay = rng.choice(["Card", "Cash", "Mobile"], n, p=[0.62, 0.23, 0.15])
    zones = [
        "Midtown",
        "Downtown",
        "Uptown",
        "Airport",
        "Harbor",
        "University",
        "Old Town",
        "Riverside",
        "Financial District",
        "Chinatown",
    ]
    df = pd.DataFrame(
        {
            "trip_id": np.arange(1, n + 1),
            "pickup_datetime": pd.Timestamp("2024-04-01")
            + pd.to_timedelta(np.sort(rng.integers(0, 30 * 86400, n)), "s"),
            "passenger_count": rng.choice([1, 2, 3, 4, 5, 6], n, p=[0.68, 0.17, 0.06, 0.04, 0.03, 0.02]),
            "trip_distance": dist,
            "fare_amount": fare,
            "tip_amount": np.where(pay == "Cash", 0.0, (fare * rng.uniform(0.08, 0.25, n)).round(2)),
            "payment_type": pay,
            "pickup_zone": _pick(rng, zones, n),
        }
    )
    _save(
        c,
        "taxi_trips.parquet",
        df,
        "trips",
        nums=["trip_distance", "fare_amount", "tip_amount", "passenger_count"],
        cats=["payment_type", "pickup_zone"],
        date="pickup_datetime",
        key="trip_id",
        desc={
            "fare_amount": ["fare", "fare paid"],
            "trip_distance": ["trip distance", "distance travelled"],
            "tip_amount": ["tip amount"],
        },
        levels={"payment_type": ("payment type", "payment types"), "pickup_zone": ("pickup zone", "pickup zones")},
        sums=["fare_amount", "tip_amount", "trip_distance"],
    )

    # lab_samples.jsonl: measurements with gaps
    n = 300
    df = pd.DataFrame(
        {
            "sample_id": [f"LAB-{i:04d}" for i in range(1, n + 1)],
            "batch": _pick(rng, [f"batch-{i:02d}" for i in range(1, 6)], n),
            "ph": rng.normal(7.1, 0.25, n).round(3),
            "temperature_c": rng.normal(21.5, 1.2, n).round(2),
            "concentration_mg_l": rng.lognormal(1.6, 0.55, n).round(3),
            "analyst": _pick(rng, ["Kim", "Ortiz", "Patel"], n),
        }
    )
    df.loc[rng.random(n) < 0.04, "ph"] = np.nan
    df.loc[rng.random(n) < 0.08, "concentration_mg_l"] = np.nan
    df.loc[rng.random(n) < 0.02, "temperature_c"] = np.nan
    _save(
        c,
        "lab_samples.jsonl",
        df,
        "samples",
        nums=["ph", "temperature_c", "concentration_mg_l"],
        cats=["batch", "analyst"],
        key="sample_id",
        desc={"ph": ["pH"], "concentration_mg_l": ["concentration (mg/L)"], "temperature_c": ["sample temperature"]},
        levels={"batch": ("batch", "batches"), "analyst": ("analyst", "analysts")},
    )

    # shipments_2023.csv and shipments_2024.csv
    items = ["bolts", "nuts", "washers", "hinges", "brackets", "screws", "rivets", "clamps", "springs", "gaskets"]
    growth = dict(zip(items, rng.uniform(0.85, 1.4, len(items)), strict=True))
    for year, n in ((2023, 1200), (2024, 1350)):
        it = rng.choice(items, n)
        base = rng.integers(20, 400, n)
        units = (base * (pd.Series(it).map(growth).to_numpy() if year == 2024 else 1)).round().astype(int)
        df = pd.DataFrame(
            {
                "shipment_id": [f"{year}-{i:05d}" for i in range(1, n + 1)],
                "ship_date": _dates(f"{year}-01-01", np.sort(rng.integers(0, 365, n))).strftime("%Y-%m-%d"),
                "item": it,
                "warehouse": _pick(rng, ["Reno", "Memphis", "Newark"], n),
                "units": units,
            }
        )
        _save(
            c,
            f"shipments_{year}.csv",
            df,
            "shipments",
            nums=["units"],
            cats=["item", "warehouse"],
            key="shipment_id",
            sums=["units"],
            levels={"item": ("item", "items"), "warehouse": ("warehouse", "warehouses")},
        )

    # loans.csv: applicants and defaults
    n = 800
    inc = rng.lognormal(4.0, 0.4, n).round(1)
    amt = (rng.uniform(0.1, 0.9, n) * inc).round(1)
    score = rng.integers(480, 840, n)
    yrs = rng.integers(0, 30, n)
    z = -1.2 + 3.0 * amt / inc - 0.012 * (score - 660) - 0.05 * yrs + rng.normal(0, 0.7, n)
    df = pd.DataFrame(
        {
            "applicant_id": np.arange(1, n + 1),
            "income_k": inc,
            "loan_amount_k": amt,
            "credit_score": score,
            "years_employed": yrs,
            "defaulted": (z > 0).astype(int),
        }
    )
    _save(
        c,
        "loans.csv",
        df,
        "applicants",
        nums=["income_k", "loan_amount_k", "credit_score", "years_employed"],
        key="applicant_id",
    )

    # scans.jsonl: barcode scans with double reads
    n = 2000
    df = pd.DataFrame(
        {
            "scanned_at": (
                pd.Timestamp("2024-05-02 08:00:00") + pd.to_timedelta(np.sort(rng.integers(0, 10 * 3600, n)), "s")
            ).strftime("%Y-%m-%d %H:%M:%S"),
            "barcode": [f"4006{x:08d}" for x in rng.integers(0, 10**8, n)],
            "location": rng.choice(["Dock A", "Dock B", "Aisle 3", "Aisle 7", "Returns"], n),
            "qty": rng.integers(1, 13, n),
        }
    )
    dup = rng.choice(n, 137, replace=False)
    df = pd.concat([df, df.iloc[dup]]).sort_values(["scanned_at", "barcode"], kind="stable").reset_index(drop=True)
    _save(
        c, "scans.jsonl", df, "scans", nums=["qty"], cats=["location"], levels={"location": ("location", "locations")}
    )


# ---------------------------------------------------------------------------------------------------------------------
# wording helpers


def _ref(c: Ctx, ds: DS, col: str) -> str:
    """A bare noun phrase for a column: its name (often in backticks) or a description."""
    desc = ds.desc.get(col, [])
    if desc and c.rng.random() < 0.5:
        return str(c.choice(desc))
    return f"`{col}`" if c.rng.random() < 0.7 else col


def _al(x: Any) -> tuple[str, ...]:
    return (str(x),)


def _wd(name: str) -> tuple[str, ...]:
    extra = {"Thursday": ("Thu", "Thur", "Thurs"), "Tuesday": ("Tue", "Tues"), "Wednesday": ("Wed",)}
    return (name, *extra.get(name, (name[:3],)))


def _month(year: int, m: int) -> tuple[str, ...]:
    name = MONTHS[m - 1]
    extra = ("Sep", "Sept") if m == 9 else (name[:3],)
    return (name, *extra, f"{year}-{m:02d}", f"{m:02d}/{year}", f"{year}/{m:02d}", f"{m}/{year}")


def _t(x: float) -> str:
    return f"{int(x):,}" if float(x).is_integer() else f"{x:g}"


def _threshold(s: pd.Series, q: float) -> tuple[float, bool]:
    """A round threshold near the q quantile, and whether values equal it (then the wording is inclusive)."""
    v = float(s.quantile(q))
    for digits in (2, 3):
        t = float(f"{v:.{digits - 1}e}")
        if not (s == t).any():
            return t, False
    return float(f"{v:.1e}"), True


def _cmp(s: pd.Series, thr: float, above: bool, inclusive: bool) -> tuple[pd.Series, str, str, str]:
    """Mask and wording of a threshold filter: (mask, 'with X ...' words, 'X is ...' words, operator)."""
    if above:
        return (s >= thr, "of at least", "at least", ">=") if inclusive else (s > thr, "above", "above", ">")
    return (s <= thr, "of at most", "at most", "<=") if inclusive else (s < thr, "below", "below", "<")


def _fmt_text(c: Ctx, fmt: Fmt) -> str:
    d = fmt.decimals
    if fmt.style == "percent":
        ex = Fmt("percent", d).render(0.123456)
        unit = "decimal" if d == 1 else "decimals"
        return str(
            c.choice(
                [
                    f"Give the answer as a percentage with {d} {unit} (like {ex}).",
                    f"Express it as a percent rounded to {d} {unit}, e.g. {ex}.",
                ]
            )
        )
    if fmt.style == "thousands":
        ex = Fmt("thousands", d).render(12345.6)
        return str(
            c.choice(
                [
                    f"Answer in thousands with {d} decimal, e.g. {ex}.",
                    f"State it in thousands (k) rounded to {d} decimal, like {ex}.",
                ]
            )
        )
    if fmt.style == "template":
        return f"Answer in the form `{fmt.key}=<value>`, with the value rounded to {d} decimals."
    if fmt.style == "sci":
        ex = Fmt("sci", d).render(0.0000123456)
        return f"Write it in scientific notation with {d} decimals, like {ex}."
    if d == 0:
        return str(c.choice(["Give it as a whole number (round to 0 decimals).", "Round to the nearest whole number."]))
    unit = "place" if d == 1 else "places"
    return str(c.choice([f"Round to {d} decimal {unit}.", f"Give the answer rounded to {d} decimals."]))


def _then(question: str, sentence: str) -> str:
    """The question followed by another sentence, with a full stop between where the question has none."""
    q = question.rstrip()
    return f"{q}{'' if q[-1] in '.?!:)' else '.'} {sentence.strip()}"


def _with_fmt(c: Ctx, question: str, fmt: Fmt | None) -> str:
    return _then(question, _fmt_text(c, fmt)) if fmt else question


def _spec(kind: str, question: str, clause: str, parts: list[Any], ds: DS | list[DS], **kw: Any) -> Spec:
    files = [d.path for d in (ds if isinstance(ds, list) else [ds])]
    return Spec(kind, question, clause, parts, files, **kw)


# ---------------------------------------------------------------------------------------------------------------------
# generators usable on any data set with the needed roles (single tasks and multipart clauses)


def g_rows(c: Ctx, ds: DS) -> Spec:
    q = c.tpl(
        [
            "How many rows are in {p}?",
            "can you tell me how many {noun} are recorded in {p}? (don't count the header)",
            "{p}: number of records?",
            "I just uploaded {p}. Count the {noun} in it and give me the number.",
        ]
    ).format(p=ds.vpath, noun=ds.noun)
    clause = str(c.choice(["how many rows it has", f"the number of {ds.noun}"]))
    return _spec("count", q, clause, [NumPart("rows", len(ds.df), "int")], ds)


def g_distinct(c: Ctx, ds: DS, col: str) -> Spec:
    sing, plur = ds.levels.get(col, (col, f"{col} values"))
    q = c.tpl(
        [
            "How many distinct values does the `{col}` column have in {p}?",
            "In {p}, how many different {plur} are there?",
            "Count the unique {col} values in {p}.",
            "quick one: number of unique {plur} in {p}?",
        ]
    ).format(p=ds.vpath, col=col, plur=plur)
    part = NumPart(f"distinct {plur}", ds.df[col].nunique(), "int")
    return _spec("count", q, f"how many different {plur} appear", [part], ds)


def g_stat(c: Ctx, ds: DS, col: str, stat: str, q: int = 90, fmt: Fmt | None = None) -> Spec:
    s = ds.df[col].dropna()
    desc = {
        "mean": s.mean(),
        "std": s.std(),
        "min": s.min(),
        "q1": s.quantile(0.25),
        "median": s.median(),
        "q3": s.quantile(0.75),
        "max": s.max(),
    }
    x = _ref(c, ds, col)
    alts: tuple[float, ...] = ()
    dump = s.describe().to_string()
    if stat == "mean":
        v = desc["mean"]
        others = [float(ds.df[o].mean()) for o in ds.nums if o != col] + [desc[k] for k in ("median", "std", "max")]
        dump = ds.df[ds.nums].describe().to_string()
        tpl = [
            "What is the average {x} in {p}?",
            "Compute the mean {x} across all {noun} in {p}.",
            "{p}: mean {x}?",
            "hey, could you look at {p} and tell me the average {x}?",
        ]
        clause, label = f"the average {x}", f"mean {col}"
    elif stat == "median":
        v = desc["median"]
        others = [desc[k] for k in ("mean", "std", "min", "q1", "q3", "max")]
        tpl = [
            "What's the median {x} in {p}?",
            "median {x}? file is {p}",
            "Find the middle value (the median) of {x} over all {noun} in {p}.",
            "Using {p}, report the median of {x}.",
        ]
        clause, label = f"the median {x}", f"median {col}"
    elif stat == "pct":
        v = float(s.quantile(q / 100))
        others = [desc[k] for k in ("mean", "std", "min", "q1", "median", "q3", "max")]
        dump = s.describe(percentiles=sorted({0.25, 0.5, 0.75, q / 100})).to_string()
        tpl = [
            "What is the {q}th percentile of {x} in {p}? (linear interpolation, the pandas default)",
            "In {p}, below which value do {q}% of the {x} values fall? Use the {q}th percentile with linear "
            "interpolation.",
            "{p}: p{q} of {x} (numpy/pandas default percentile)?",
        ]
        clause, label = f"the {q}th percentile of {x}", f"percentile of {col}"
    else:
        v = desc["std"]
        alts = (float(s.std(ddof=0)),)
        others = [desc[k] for k in ("mean", "min", "q1", "median", "q3", "max")]
        tpl = [
            "What is the standard deviation of {x} in {p}? Use the sample standard deviation (ddof=1).",
            "How spread out is {x} in {p}? Give the sample standard deviation.",
            "Compute the std of {x} for {p} (ddof=1, as pandas does by default).",
        ]
        clause, label = f"the sample standard deviation of {x}", f"std of {col}"
    question = _with_fmt(c, c.tpl(tpl).format(p=ds.vpath, x=x, q=q, noun=ds.noun), fmt)
    part = NumPart(label, float(v), alts=alts, fmt=fmt, distractors=[float(o) for o in others])
    return _spec("spread", question, clause, [part], ds, dump=dump, stated=fmt is not None)


def g_filter_num(
    c: Ctx, ds: DS, col: str, ycol: str | None = None, above: bool = True, want_count: bool = True
) -> Spec | None:
    s = ds.df[col]
    thr, inclusive = _threshold(s.dropna(), 0.8 if above else 0.2)
    mask, word, isword, sym = _cmp(s, thr, above, inclusive)
    if not 0 < mask.sum() < len(s):
        return None
    x, t = _ref(c, ds, col), _t(thr)
    parts: list[Any] = []
    if want_count:
        parts.append(NumPart(f"{ds.noun} in the filter", int(mask.sum()), "int"))
    dump = None
    if ycol is None:
        tpl = [
            "How many {noun} in {p} have {x} {word} {t}?",
            "Count the rows of {p} where {col} {sym} {t}.",
            "In {p}, how many {noun} have a {x} value {word} {t}?",
        ]
        clause = f"how many {ds.noun} have {x} {word} {t}"
    else:
        y = _ref(c, ds, ycol)
        m = ds.df.loc[mask, ycol].mean()
        parts.append(
            NumPart(
                f"mean {ycol} of those {ds.noun}",
                float(m),
                distractors=[float(ds.df[ycol].mean()), float(ds.df.loc[~mask, ycol].mean())],
            )
        )
        dump = ds.df.groupby(mask.rename("selected"))[ycol].describe().to_string()
        if want_count:
            tpl = [
                "Among the {noun} in {p} with {x} {word} {t}, how many are there and what is their average {y}?",
                "Filter {p} to rows where {col} {sym} {t}; report the row count and the mean {y}.",
                "{p}: {noun} with {x} {word} {t} - count and mean {y}?",
            ]
            clause = f"how many {ds.noun} have {x} {word} {t} and their average {y}"
        else:
            tpl = [
                "What is the average {y} of the {noun} in {p} whose {x} is {isword} {t}?",
                "For rows of {p} with {col} {sym} {t}, compute the mean {y}.",
                "mean {y} where {col} {sym} {t}? ({p})",
            ]
            clause = f"the average {y} of {ds.noun} with {x} {word} {t}"
        clause = clause.replace("{", "").replace("}", "")
        return _spec(
            "filter",
            c.tpl(tpl).format(p=ds.vpath, noun=ds.noun, x=x, word=word, isword=isword, t=t, col=col, sym=sym, y=y),
            clause,
            parts,
            ds,
            dump=dump,
        )
    return _spec(
        "filter", c.tpl(tpl).format(p=ds.vpath, noun=ds.noun, x=x, word=word, t=t, col=col, sym=sym), clause, parts, ds
    )


def g_filter_cat(c: Ctx, ds: DS, cat: str, level: str, ycol: str, want_count: bool = True) -> Spec:
    mask = ds.df[cat] == level
    y = _ref(c, ds, ycol)
    means = ds.df.groupby(cat)[ycol].mean()
    parts: list[Any] = []
    if want_count:
        parts.append(NumPart(f"{ds.noun} in that group", int(mask.sum()), "int"))
    parts.append(
        NumPart(
            f"mean {ycol} of that group",
            float(means[level]),
            distractors=[float(v) for k, v in means.items() if k != level],
        )
    )
    if want_count:
        tpl = [
            'Looking only at the {noun} in {p} where {cat} is "{level}": how many are there, and what is their mean '
            "{y}?",
            'Filter {p} to {cat} == "{level}". How many rows remain and what is the average {y}?',
            "{p}: count of {level} {noun} and their average {y}?",
        ]
        clause = f'how many {ds.noun} have {cat} "{level}" and their average {y}'
    else:
        tpl = [
            'What is the average {y} for {noun} where {cat} is "{level}" in {p}?',
            "In {p}, what's the mean {y} among the {level} {noun}?",
            '{p}: mean {y} where {cat} == "{level}"?',
        ]
        clause = f'the average {y} for {cat} "{level}"'
    q = c.tpl(tpl).format(p=ds.vpath, noun=ds.noun, cat=cat, level=level, y=y)
    return _spec("filter", q, clause, parts, ds, dump=ds.df.groupby(cat)[ycol].agg(["count", "mean"]).to_string())


def g_rank(
    c: Ctx,
    ds: DS,
    cat: str,
    agg: pd.Series,
    m: str,
    n: int = 1,
    top: bool = True,
    with_value: bool = False,
    ordered: bool = False,
    al: Callable[[Any], tuple[str, ...]] = _al,
    case: bool = False,
    kind: str = "topn",
    mode: str = "float",
    files: list[DS] | None = None,
    max_d: int = 40,
) -> Spec:
    s = agg.sort_values(ascending=not top)
    gap = abs(s.iloc[n - 1] - s.iloc[n]) if len(s) > n else 1.0
    assert gap > 1e-9 * max(1.0, abs(s.iloc[n - 1])), f"tie in {cat} ranking"
    chosen, rest = list(s.index[:n]), list(s.index[n : n + max_d])
    g, gs = ds.levels.get(cat, (cat, f"{cat} values"))
    hi, big, mx, tb = ("highest", "largest", "max", "top") if top else ("lowest", "smallest", "min", "bottom")
    part = NamePart(
        f"{tb} {gs if n > 1 else g}",
        [al(x) for x in chosen],
        [al(x) for x in rest],
        ordered=ordered and n > 1,
        case=case,
        values=[float(s[x]) for x in chosen] if with_value else [],
        dvalues=[float(s[x]) for x in rest],
        mode=mode,
    )
    val = " Give the value too." if n == 1 else " Include each one's value."
    if n == 1:
        tpl = [
            "Which {g} has the {hi} {m} in {p}?",
            "In {p}, find the {g} with the {big} {m}.",
            "{p}: {g} with the {mx} {m}?",
            "Looking at {p}, which {g} comes out {first} by {m}?",
        ]
        clause = f"which {g} has the {hi} {m}"
    else:
        order = c.choice([f", from {hi} down", ", in order"]) if ordered else ""
        tpl = [
            "List the {n} {gs} with the {hi} {m} in {p}{order}.",
            "What are the {tb} {n} {gs} by {m} in {p}{order}?",
            "Rank the {gs} in {p} by {m} and give me the {tb} {n}{order}.",
            "{tb} {n} {gs} by {m}{order}? data: {p}",
        ]
        clause = f"the {tb} {n} {gs} by {m}" + (" (in order)" if ordered else "")
        order_txt = order
    q = c.tpl(tpl).format(
        p=ds.vpath,
        g=g,
        gs=gs,
        hi=hi,
        big=big,
        mx=mx,
        tb=tb,
        n=n,
        m=m,
        first="on top" if top else "last",
        order=order_txt if n > 1 else "",
    )
    if with_value:
        q = _then(q, val)
        clause += " (with the value)" if n == 1 else " (with their values)"
    return _spec(kind, q, clause, [part], files or ds, dump=s.head(n + max_d).to_string())


def g_share_level(
    c: Ctx, ds: DS, cat: str, level: Any, fmt: Fmt | None = None, label: str | None = None
) -> Spec | None:
    vc = ds.df[cat].value_counts(normalize=True)
    if (vc == vc[level]).sum() > 1:
        return None
    g, gs = ds.levels.get(cat, (cat, f"{cat} values"))
    lv = label or f'"{level}"'
    tpl = [
        "What percentage of the {noun} in {p} have {cat} equal to {lv}?",
        "What share of the rows in {p} are {lv}?",
        "In {p}, what fraction of {noun} have {g} {lv}?",
    ]
    q = _with_fmt(c, c.tpl(tpl).format(p=ds.vpath, noun=ds.noun, cat=cat, lv=lv, g=g), fmt)
    # a column with gaps: "what percentage of the contacts" is read over every row as often as over the
    # rows with a value (pandas' value_counts(normalize=True)); both are right
    of_all = float(ds.df[cat].eq(level).mean())
    part = NumPart(
        f"share {level}",
        float(vc[level]),
        "share",
        alts=(of_all,) if abs(of_all - float(vc[level])) > 1e-12 else (),
        fmt=fmt,
        distractors=[float(v) for k, v in vc.items() if k != level],
    )
    return _spec(
        "share",
        q,
        f"what percentage of {ds.noun} have {cat} {lv}",
        [part],
        ds,
        dump=vc.to_string(),
        stated=fmt is not None,
    )


def g_share_total(
    c: Ctx, ds: DS, cat: str, level: str, per_row: pd.Series, m: str, fmt: Fmt | None = None, kind: str = "share"
) -> Spec:
    tot = per_row.groupby(ds.df[cat]).sum()
    sh = tot / tot.sum()
    g, gs = ds.levels.get(cat, (cat, f"{cat} values"))
    tpl = [
        'What percent of the total {m} in {p} comes from the {g} "{level}"?',
        "Of all the {m} in {p}, what share is from {level}?",
        "{p}: {level}'s share of total {m}?",
        "I need the {level} {g}'s share of overall {m} in {p}, as a percentage.",
    ]
    q = _with_fmt(c, c.tpl(tpl).format(p=ds.vpath, m=m, g=g, level=level), fmt)
    part = NumPart(
        f"share of {m}", float(sh[level]), "share", fmt=fmt, distractors=[float(v) for k, v in sh.items() if k != level]
    )
    dump = pd.DataFrame({"total": tot, "share": sh}).to_string()
    return _spec(
        kind, q, f"the share of total {m} that comes from {level}", [part], ds, dump=dump, stated=fmt is not None
    )


def g_corr(c: Ctx, ds: DS, x: str, y: str, fmt: Fmt | None = None) -> Spec:
    r = float(ds.df[x].corr(ds.df[y]))
    cm = ds.df[ds.nums].corr()
    others = [float(cm.loc[a, b]) for i, a in enumerate(ds.nums) for b in ds.nums[i + 1 :] if {a, b} != {x, y}]
    xr, yr = _ref(c, ds, x), _ref(c, ds, y)
    tpl = [
        "What is the Pearson correlation between {xr} and {yr} in {p}?",
        "In {p}, how strongly are {xr} and {yr} correlated? Give Pearson's r.",
        "corr({x}, {y}) in {p}? (Pearson)",
        "Compute the correlation coefficient (Pearson) of {xr} vs {yr} using {p}.",
    ]
    q = _with_fmt(c, c.tpl(tpl).format(p=ds.vpath, x=x, y=y, xr=xr, yr=yr), fmt)
    part = NumPart(f"Pearson r of {x} and {y}", r, fmt=fmt, distractors=others)
    return _spec(
        "correlation",
        q,
        f"the Pearson correlation between {xr} and {yr}",
        [part],
        ds,
        dump=cm.to_string(),
        stated=fmt is not None,
    )


def g_month(c: Ctx, ds: DS, per_row: pd.Series, m: str, year: int, top: bool = True, with_value: bool = False) -> Spec:
    d = pd.to_datetime(ds.df[ds.date])
    mask = d.dt.year == year
    agg = per_row[mask].groupby(d[mask].dt.month).sum()
    s = agg.sort_values(ascending=not top)
    best, rest = int(s.index[0]), [int(k) for k in s.index[1:]]
    hi = "highest" if top else "lowest"
    part = NamePart(
        f"{hi} month",
        [_month(year, best)],
        [_month(year, k) for k in rest],
        case=True,
        values=[float(s.iloc[0])] if with_value else [],
        dvalues=[float(s[k]) for k in rest],
    )
    tpl = [
        "Which month of {year} (by {d}) had the {hi} {m} in {p}?",
        "Group {p} by calendar month of {d} (only {year}) and tell me which month has the {hi} {m}.",
        "In {p}, what was the {word} month of {year} for {m}? Use {d} for the month.",
    ]
    q = c.tpl(tpl).format(p=ds.vpath, year=year, hi=hi, m=m, word="best" if top else "weakest", d=f"`{ds.date}`")
    if with_value:
        q = _then(q, "How much was it?")
    clause = f"which month of {year} (by `{ds.date}`) had the {hi} {m}" + (" and how much" if with_value else "")
    return _spec("derived_group", q, clause, [part], ds, dump=agg.to_string())


def g_weekday_top(c: Ctx, ds: DS, top: bool = True) -> Spec:
    wd = pd.to_datetime(ds.df[ds.date]).dt.day_name()
    vc = wd.value_counts()
    s = vc.sort_values(ascending=not top)
    part = NamePart("weekday", [_wd(s.index[0])], [_wd(k) for k in s.index[1:]], case=True)
    hi = "most" if top else "fewest"
    tpl = [
        "Which day of the week (of {d}) has the {hi} {noun} in {p}?",
        "Using {d} in {p}, find the weekday with the {hi} {noun}.",
        "{p}: " + ("busiest" if top else "quietest") + " weekday by {d}?",
    ]
    q = c.tpl(tpl).format(p=ds.vpath, hi=hi, noun=ds.noun, d=f"`{ds.date}`")
    clause = f"which weekday (of `{ds.date}`) has the {hi} {ds.noun}"
    return _spec("derived_group", q, clause, [part], ds, dump=vc.to_string())


def g_missing_most(c: Ctx, ds: DS) -> Spec:
    na = ds.df.isna().sum()
    na = na[na > 0].sort_values(ascending=False)
    col = str(na.index[0])
    part = NamePart(
        "column with the most missing values",
        [(col,)],
        [(str(k),) for k in na.index[1:]],
        values=[float(na.iloc[0])],
        dvalues=[float(v) for v in na.iloc[1:]],
        mode="int",
    )
    tpl = [
        "Which column of {p} has the most missing values, and how many does it have?",
        "In {p}, find the column with the largest number of empty (NaN) cells and give that count.",
        "{p}: most-incomplete column and its number of missing values?",
    ]
    q = c.tpl(tpl).format(p=ds.vpath)
    return _spec(
        "missing",
        q,
        "which column has the most missing values (and how many)",
        [part],
        ds,
        dump=ds.df.isna().sum().to_string(),
    )


def g_missing_share(c: Ctx, ds: DS, col: str, fmt: Fmt | None = None) -> Spec:
    sh = float(ds.df[col].isna().mean())
    x = _ref(c, ds, col)
    tpl = [
        "What percentage of the rows in {p} have no value for {x}?",
        "In {p}, what fraction of the {noun} are missing {x}?",
        "{p}: share of rows where `{col}` is missing?",
    ]
    q = _with_fmt(c, c.tpl(tpl).format(p=ds.vpath, x=x, col=col, noun=ds.noun), fmt)
    part = NumPart(
        f"share missing {col}",
        sh,
        "share",
        fmt=fmt,
        distractors=[float(v) for k, v in ds.df.isna().mean().items() if k != col and v > 0],
    )
    return _spec(
        "missing",
        q,
        f"what share of rows are missing {x}",
        [part],
        ds,
        dump=ds.df.isna().mean().to_string(),
        stated=fmt is not None,
    )


def g_missing_rows(c: Ctx, ds: DS) -> Spec:
    n = int(ds.df.isna().any(axis=1).sum())
    tpl = [
        "How many rows of {p} have at least one missing value?",
        "Count the {noun} in {p} that are incomplete (any column empty).",
        "{p}: number of rows containing a NaN anywhere?",
    ]
    part = NumPart(
        "rows with a missing value", n, "int", distractors=[float(v) for v in ds.df.isna().sum() if v > 0 and v != n]
    )
    return _spec(
        "missing",
        c.tpl(tpl).format(p=ds.vpath, noun=ds.noun),
        "how many rows have any missing value",
        [part],
        ds,
        dump=ds.df.isna().sum().to_string(),
    )


def g_dup_rows(c: Ctx, ds: DS) -> Spec:
    n = int(ds.df.duplicated().sum())
    tpl = [
        "How many rows in {p} are exact duplicates of an earlier row? (Don't count the first occurrence.)",
        "{p} has some repeated lines. How many fully duplicated rows are there, not counting each original?",
        "Count the duplicate rows in {p} (rows identical in every column to a row above them).",
    ]
    return _spec(
        "duplicates",
        c.tpl(tpl).format(p=ds.vpath),
        "how many rows are exact duplicates of an earlier row",
        [NumPart("duplicate rows", n, "int")],
        ds,
    )


def g_zscore(c: Ctx, ds: DS, col: str, thr: float = 3.0) -> Spec | None:
    s = ds.df[col].dropna()
    z1 = ((s - s.mean()) / s.std()).abs()
    z0 = ((s - s.mean()) / s.std(ddof=0)).abs()
    if (z1 > thr).sum() != (z0 > thr).sum() or ((z1 > thr - 0.05) & (z1 < thr + 0.05)).any() or not (z1 > thr).any():
        return None
    x = _ref(c, ds, col)
    tpl = [
        "How many {noun} in {p} are outliers in {x} by z-score, i.e. |z| > {thr}? (z uses the column's mean and "
        "standard deviation.)",
        "Flag outliers in {x} of {p} with the z-score rule (|z| > {thr}, z = (x - mean) / std). How many are there?",
        "{p}: count of {col} values with an absolute z-score above {thr}?",
    ]
    q = c.tpl(tpl).format(p=ds.vpath, noun=ds.noun, x=x, col=col, thr=thr)
    return _spec(
        "outliers",
        q,
        f"how many {x} values have |z| > {thr} (z-score with the column's mean and std)",
        [NumPart("z-score outliers", int((z1 > thr).sum()), "int")],
        ds,
    )


def g_iqr(c: Ctx, ds: DS, col: str, fence: bool = False, fmt: Fmt | None = None) -> Spec | None:
    s = ds.df[col].dropna()
    n = _iqr_count(s)
    if not n:
        return None
    q1, q3 = s.quantile(0.25), s.quantile(0.75)
    x = _ref(c, ds, col)
    parts: list[Any] = [NumPart("IQR outliers", n, "int")]
    tpl = [
        "Using the 1.5 x IQR rule (below Q1 - 1.5*IQR or above Q3 + 1.5*IQR), how many outliers does {x} have in {p}?",
        "How many {noun} in {p} are outliers in {x} by the interquartile-range rule (1.5 IQR beyond the quartiles, "
        "pandas default quantiles)?",
        "{p}: number of IQR outliers (1.5*IQR fences) in `{col}`?",
    ]
    q = c.tpl(tpl).format(p=ds.vpath, x=x, noun=ds.noun, col=col)
    if fence:
        parts.append(
            NumPart(
                "upper fence",
                float(q3 + 1.5 * (q3 - q1)),
                fmt=fmt,
                distractors=[float(q1), float(q3), float(q1 - 1.5 * (q3 - q1))],
            )
        )
        q = _then(q, "Also give the upper fence (Q3 + 1.5*IQR)" + (" as a whole number." if fmt else "."))
    return _spec("outliers", q, f"how many IQR outliers (1.5*IQR rule) {x} has", parts, ds, stated=fmt is not None)


def g_bar_chart(c: Ctx, ds: DS, cat: str, per_row: pd.Series, m: str, name: str) -> Spec:
    agg = per_row.groupby(ds.df[cat]).sum().sort_values(ascending=False)
    out = f"{OUT}/{name}"
    img = _chart(
        lambda ax: (ax.bar([str(k) for k in agg.index], agg.values), ax.set_ylabel(m)), name.rsplit(".", 1)[-1]
    )
    g, gs = ds.levels.get(cat, (cat, f"{cat} values"))
    tpl = [
        "Make a bar chart of {m} per {g} from {p} and save it as {out}.",
        "Using {p}, plot {m} by {g} as bars; save the figure to {out}.",
        "Please save a bar plot at {out} showing the {m} for each {g} in {p}.",
    ]
    q = c.tpl(tpl).format(p=ds.vpath, m=m, g=g, out=out)
    parts = [ImagePart("bar chart", out, img), NoFailPart()]
    return _spec("chart", q, f"save a bar chart of {m} per {g} to {out}", parts, ds, outputs=[out], action=True)


def g_hist(c: Ctx, ds: DS, col: str, name: str) -> Spec:
    s = ds.df[col].dropna()
    out = f"{OUT}/{name}"
    img = _chart(lambda ax: (ax.hist(s, bins=30), ax.set_xlabel(col)), name.rsplit(".", 1)[-1])
    x = _ref(c, ds, col)
    tpl = [
        "Plot a histogram of {x} in {p} and save it to {out}.",
        "I'd like to see the distribution of {x} from {p}: save a histogram as {out}.",
        "{p}: histogram of {col} -> {out}",
    ]
    q = c.tpl(tpl).format(p=ds.vpath, x=x, col=col, out=out)
    parts = [ImagePart("histogram", out, img), NoFailPart()]
    return _spec("chart", q, f"save a histogram of {x} to {out}", parts, ds, outputs=[out], action=True)


def g_clean_rows(c: Ctx, ds: DS, mask: pd.Series, cond: str, cols: list[str] | None, name: str) -> Spec | None:
    if not 3 <= mask.sum() < len(mask):
        return None
    out = f"{OUT}/{name}"
    exp = ds.df.loc[mask, cols or list(ds.df.columns)].reset_index(drop=True)
    keep = f" with only the columns {', '.join(cols)}" if cols else ""
    tpl = [
        "From {p}, keep only the rows where {cond}{keep} and write the result to {out}.",
        "Filter {p} to {cond}{keep}; save it as {out}.",
        "Please save the {noun} of {p} where {cond} to {out}{keep}.",
    ]
    q = c.tpl(tpl).format(p=ds.vpath, cond=cond, keep=keep, out=out, noun=ds.noun)
    parts = [TablePart("filtered table", out, exp, ds.key or str(exp.columns[0])), NoFailPart()]
    return _spec("clean_file", q, f"save the rows where {cond}{keep} to {out}", parts, ds, outputs=[out], action=True)


# ---------------------------------------------------------------------------------------------------------------------
# task-specific generators


def _revenue(ds: DS) -> pd.Series:
    return ds.df["quantity"] * ds.df["unit_price"]


def _rev_phrase(c: Ctx) -> str:
    return str(
        c.choice(
            [
                "revenue (quantity × unit_price)",
                "revenue (quantity times unit_price)",
                "sales revenue (quantity * unit_price)",
            ]
        )
    )


def s_filter_city(c: Ctx) -> Spec:
    ds = c.ds["listings.tsv"]
    df = ds.df
    ny = df.City == "New York"
    thr, inclusive = _threshold(df.loc[ny, "Price"], 0.6)
    above, _, isword, sym = _cmp(df.Price, thr, True, inclusive)
    mask = ny & above
    tpl = [
        "How many listings in {p} are in New York and priced {isword} ${t}? And what is their average Sqft?",
        "Look at the New York listings in {p} with an asking price {isword} {t}: how many are there, and what is "
        "their mean square footage?",
        "{p}: City == 'New York' and Price {sym} {t} -> count and mean Sqft?",
    ]
    q = c.tpl(tpl).format(p=ds.vpath, t=_t(thr), isword=isword, sym=sym)
    parts = [
        NumPart("listings", int(mask.sum()), "int"),
        NumPart(
            "mean Sqft",
            float(df.loc[mask, "Sqft"].mean()),
            distractors=[
                float(df.loc[ny, "Sqft"].mean()),
                float(df.Sqft.mean()),
                float(df.loc[ny & ~mask, "Sqft"].mean()),
            ],
        ),
    ]
    return _spec("filter", q, "", parts, ds)


def s_filter_month(c: Ctx) -> Spec:
    ds = c.ds["sales.csv"]
    d = pd.to_datetime(ds.df.order_date)
    rev = _revenue(ds)
    mask = (d.dt.year == 2023) & (d.dt.month == 3)
    by_month = rev.groupby([d.dt.year, d.dt.month]).sum()
    fmt = Fmt("thousands", 1)
    tpl = [
        "How many orders in {p} were placed in March 2023, and what was their total {rev}?",
        "For orders placed during March 2023 ({p}), give me the number of orders and the total {rev}.",
        "{p}: orders in 2023-03 - count and summed {rev}?",
    ]
    q = _then(
        c.tpl(tpl).format(p=ds.vpath, rev=_rev_phrase(c)), "Give the revenue in thousands with 1 decimal, e.g. 12.3k."
    )
    parts = [
        NumPart("orders", int(mask.sum()), "int"),
        NumPart(
            "revenue",
            float(rev[mask].sum()),
            fmt=fmt,
            distractors=[float(by_month[(y, m)]) for y, m in ((2022, 3), (2023, 2), (2023, 4))],
        ),
    ]
    return _spec("filter", q, "", parts, ds, dump=by_month.to_string(), stated=True)


def s_filter_after(c: Ctx) -> Spec:
    ds = c.ds["flights_2022.csv"]
    df = ds.df
    after = pd.to_datetime(df.date) > "2022-06-30"
    mask = after & (df.origin == "ORD")
    by_origin = df[after].groupby("origin").dep_delay.mean()
    tpl = [
        "For flights departing ORD after 2022-06-30 in {p}, what is the average departure delay? Ignore cancelled "
        "flights (they have no delay value).",
        "In {p}, take the flights from origin ORD dated after June 30, 2022. What's their mean dep_delay (skip "
        "missing values)?",
        "{p}: mean dep_delay for origin == 'ORD' and date > 2022-06-30?",
    ]
    part = NumPart(
        "mean dep_delay",
        float(df.loc[mask, "dep_delay"].mean()),
        distractors=[float(v) for k, v in by_origin.items() if k != "ORD"],
    )
    return _spec("filter", c.tpl(tpl).format(p=ds.vpath), "", [part], ds, dump=by_origin.to_string())


def s_filter_hired(c: Ctx) -> Spec:
    ds = c.ds["employees.xlsx"]
    df = ds.df
    hd = pd.to_datetime(df.HireDate)
    day = next(d for d in pd.date_range("2020-06-30", periods=30) if not (hd == d).any())
    mask = hd > day
    tpl = [
        "How many employees in {p} were hired after {d}, and what is their average salary?",
        "Among staff in {p} whose HireDate is later than {d}: headcount and mean Salary?",
        "I need two numbers from {p}: the number of people hired after {d} and the mean salary of that group.",
    ]
    parts = [
        NumPart("employees", int(mask.sum()), "int"),
        NumPart(
            "mean salary",
            float(df.loc[mask, "Salary"].mean()),
            distractors=[float(df.Salary.mean()), float(df.loc[~mask, "Salary"].mean())],
        ),
    ]
    return _spec("filter", c.tpl(tpl).format(p=ds.vpath, d=day.strftime("%Y-%m-%d")), "", parts, ds)


def s_share_converted(c: Ctx) -> Spec:
    ds = c.ds["web_sessions.jsonl"]
    conv = ds.df.converted.astype(bool)
    fmt = Fmt("percent", 2)
    by_page = conv.groupby(ds.df.landingPage).mean()
    tpl = [
        "What percent of the sessions in {p} converted?",
        "In {p}, what's the overall conversion rate (share of sessions with converted = true)?",
        "{p}: conversion rate across all sessions?",
    ]
    q = _with_fmt(c, c.tpl(tpl).format(p=ds.vpath), fmt)
    part = NumPart("conversion rate", float(conv.mean()), "share", fmt=fmt, distractors=[float(v) for v in by_page])
    return _spec("share", q, "", [part], ds, dump=by_page.to_string(), stated=True)


def s_weekday_counts(c: Ctx) -> Spec:
    ds = c.ds["web_sessions.jsonl"]
    wd = pd.to_datetime(ds.df.startTime).dt.day_name()
    vc = wd.value_counts()
    tpl = [
        "How many sessions in {p} started on each day of the week (Monday to Sunday)?",
        "Break down the sessions in {p} by weekday of startTime: give the count for every day.",
        "{p}: sessions per weekday?",
    ]
    parts = [
        NumPart(d, int(vc[d]), "int", near=_wd(d), near_case=True, near_others=[_wd(o) for o in WEEKDAYS if o != d])
        for d in WEEKDAYS
    ]
    return _spec("derived_group", c.tpl(tpl).format(p=ds.vpath), "", parts, ds)


def s_bins(c: Ctx) -> Spec:
    ds = c.ds["listings.tsv"]
    df = ds.df
    labels = ["compact", "mid-size", "large", "very large"]
    b = pd.cut(df.Sqft, [0, 1000, 1500, 2500, np.inf], labels=labels)
    means = df.Price.groupby(b, observed=True).mean()
    tpl = [
        "Bin the listings in {p} by Sqft into compact (up to 1,000), mid-size (1,000-1,500), large (1,500-2,500) and "
        "very large (over 2,500). What is the mean Price in each bin?",
        "Using {p}: group homes into size bands - compact: Sqft <= 1000; mid-size: 1000 < Sqft <= 1500; large: "
        "1500 < Sqft <= 2500; very large: Sqft > 2500 - and give the average asking price per band.",
        "{p}: average Price by Sqft bin, bins (0,1000] compact, (1000,1500] mid-size, (1500,2500] large, (2500,inf) "
        "very large?",
    ]
    parts = [NumPart(lb, float(means[lb]), near=(lb,), near_others=[(o,) for o in labels if o != lb]) for lb in labels]
    return _spec("derived_group", c.tpl(tpl).format(p=ds.vpath), "", parts, ds)


def s_year_totals(c: Ctx) -> Spec:
    ds = c.ds["building_energy.parquet"]
    y = pd.to_datetime(ds.df.month).dt.year
    tot = ds.df.kwh.groupby(y).sum()
    tpl = [
        "What was the total kwh in {p} for each year?",
        "Sum the electricity use (kwh) in {p} by calendar year.",
        "{p}: yearly totals of kwh across all buildings, please.",
    ]
    parts = [
        NumPart(str(k), float(v), near=(str(k),), near_others=[(str(o),) for o in tot.index if o != k])
        for k, v in tot.items()
    ]
    return _spec("derived_group", c.tpl(tpl).format(p=ds.vpath), "", parts, ds)


def s_yoy(c: Ctx) -> Spec:
    ds = c.ds["sales.csv"]
    rev = _revenue(ds)
    by_year = rev.groupby(pd.to_datetime(ds.df.order_date).dt.year).sum()
    diff = float(by_year[2023] - by_year[2022])
    fmt = Fmt("thousands", 1)
    tpl = [
        "By how much did total {rev} in {p} change from 2022 to 2023? Give the difference (2023 minus 2022) in "
        "thousands with 1 decimal, e.g. 12.3k, and the percentage change.",
        "Compare {p} year over year: what is 2023's total {rev} minus 2022's (in thousands, 1 decimal, like 45.6k), "
        "and what is the growth in percent?",
        "{p}: YoY change in {rev}, 2022 -> 2023? absolute (in k, 1 decimal, e.g. 7.8k) and %",
    ]
    parts = [
        NumPart("difference", diff, fmt=fmt, distractors=[float(by_year[2022]), float(by_year[2023])]),
        NumPart("percent change", diff / float(by_year[2022]), "share"),
    ]
    return _spec(
        "difference",
        c.tpl(tpl).format(p=ds.vpath, rev=_rev_phrase(c)),
        "",
        parts,
        ds,
        dump=by_year.to_string(),
        stated=True,
    )


def s_ratio(c: Ctx) -> Spec:
    ds = c.ds["employees.xlsx"]
    means = ds.df.groupby("Department").Salary.mean()
    fmt = Fmt("decimals", 3)
    tpl = [
        "In {p}, how many times higher is the average Salary in Engineering than in Sales? (ratio of the two means)",
        "What's the ratio of mean salary for the Engineering department to mean salary for Sales in {p}?",
        "{p}: mean(Salary | Engineering) / mean(Salary | Sales)?",
    ]
    q = _with_fmt(c, c.tpl(tpl).format(p=ds.vpath), fmt)
    part = NumPart("ratio", float(means["Engineering"] / means["Sales"]), fmt=fmt)
    return _spec("difference", q, "", [part], ds, stated=True)


def s_two_files(c: Ctx) -> Spec:
    a, b = c.ds["shipments_2023.csv"], c.ds["shipments_2024.csv"]
    ta, tb = a.df.groupby("item").units.sum(), b.df.groupby("item").units.sum()
    delta = (tb - ta).sort_values(ascending=False)
    tpl = [
        "I have shipments for two years: {a} and {b}. How much did total units shipped change from 2023 to 2024, "
        "and which item had the largest increase in units?",
        "Compare {a} with {b}: give the change in total units (2024 minus 2023) and name the item whose units grew "
        "the most.",
        "{a} vs {b} - total units difference (2024-2023)? item with the biggest rise?",
    ]
    parts = [
        NumPart("change in total units", int(b.df.units.sum() - a.df.units.sum()), "int"),
        NamePart("item with the largest increase", [(str(delta.index[0]),)], [(str(k),) for k in delta.index[1:]]),
    ]
    q = c.tpl(tpl).format(a=a.vpath, b=b.vpath)
    return _spec("difference", q, "", parts, [a, b], dump=pd.DataFrame({"2023": ta, "2024": tb}).to_string())


def s_type_increase(c: Ctx) -> Spec:
    ds = c.ds["building_energy.parquet"]
    y = pd.to_datetime(ds.df.month).dt.year
    tot = ds.df.kwh.groupby([ds.df.building_type, y]).sum().unstack()
    pct = (tot[2023] / tot[2022] - 1).sort_values(ascending=False)
    tpl = [
        "Which building type in {p} had the largest percentage increase in total kwh from 2022 to 2023, and by "
        "how much?",
        "For each building_type in {p}, compare total 2023 energy use with 2022. Which type grew the most "
        "(relative change), and what was its % change?",
        "{p}: building type with the biggest relative kwh growth 2022->2023 (and the % growth)?",
    ]
    part = NamePart(
        "building type",
        [(str(pct.index[0]),)],
        [(str(k),) for k in pct.index[1:]],
        values=[float(pct.iloc[0])],
        dvalues=[float(v) for v in pct.iloc[1:]],
        mode="share",
    )
    return _spec("difference", c.tpl(tpl).format(p=ds.vpath), "", [part], ds, dump=pct.to_string())


def s_missing_per_col(c: Ctx) -> Spec:
    ds = c.ds["weather_stations.tsv"]
    na = ds.df.isna().sum()
    cols = [str(k) for k, v in na.items() if v > 0]
    tpl = [
        "How many missing values does each column of {p} have?",
        "Count the empty cells per column in {p}.",
        "{p} has some gaps - for every column, how many values are missing?",
    ]
    parts = [
        NumPart(col, int(na[col]), "int", near=(col,), near_others=[(str(o),) for o in ds.df.columns if o != col])
        for col in cols
    ]
    return _spec("missing", c.tpl(tpl).format(p=ds.vpath), "", parts, ds)


def s_dup_emails(c: Ctx) -> Spec:
    ds = c.ds["contacts.csv"]
    vc = ds.df.email.value_counts()
    tpl = [
        "How many email addresses appear more than once in {p}?",
        "In {p}, count the distinct emails that are used by two or more rows.",
        "{p}: number of duplicated email values (count each repeated address once)?",
    ]
    part = NumPart("repeated emails", int((vc > 1).sum()), "int")
    return _spec("duplicates", c.tpl(tpl).format(p=ds.vpath), "", [part], ds)


def s_dedup_remaining(c: Ctx) -> Spec:
    ds = c.ds["scans.jsonl"]
    tpl = [
        "The scanner in {p} sometimes records the same scan twice (identical rows). After dropping exact duplicate "
        "rows, how many scans remain?",
        "How many rows are left in {p} once fully duplicated rows are removed (keeping one copy of each)?",
        "{p}: row count after drop_duplicates()?",
    ]
    part = NumPart("rows after de-duplication", len(ds.df.drop_duplicates()), "int", distractors=[float(len(ds.df))])
    return _spec("duplicates", c.tpl(tpl).format(p=ds.vpath), "", [part], ds)


def s_welch(c: Ctx) -> Spec:
    from scipy import stats

    ds = c.ds["tips.csv"]
    a, b = ds.df.loc[ds.df.smoker == "Yes", "tip"], ds.df.loc[ds.df.smoker == "No", "tip"]
    r = stats.ttest_ind(a, b, equal_var=False)
    tpl = [
        "Run a Welch's t-test (unequal variances) comparing tip for smokers vs non-smokers in {p}. What are the t "
        "statistic and the p-value?",
        "Do smokers tip differently from non-smokers? Using {p}, give the t statistic and two-sided p-value of a "
        "two-sample t-test with unequal variances (Welch).",
        "{p}: Welch t-test, tip ~ smoker (Yes vs No): t and p?",
    ]
    parts = [NumPart("t", float(r.statistic), alts=(-float(r.statistic),)), NumPart("p-value", float(r.pvalue), "p")]
    return _spec("stat_test", c.tpl(tpl).format(p=ds.vpath), "", parts, ds)


def s_student(c: Ctx) -> Spec:
    from scipy import stats

    ds = c.ds["students.csv"]
    a, b = ds.df.loc[ds.df.homeroom == "Oak", "math_score"], ds.df.loc[ds.df.homeroom == "Pine", "math_score"]
    r = stats.ttest_ind(a, b, equal_var=True)
    tpl = [
        "Is there a difference in math_score between homerooms Oak and Pine in {p}? Use Student's t-test (equal "
        "variances assumed) and report t and the p-value.",
        "Using {p}, compare math scores of the Oak and Pine homerooms with a pooled-variance (Student) two-sample "
        "t-test: t statistic and p-value?",
        "{p}: Student t-test (equal_var=True), math_score Oak vs Pine - t, p?",
    ]
    parts = [NumPart("t", float(r.statistic), alts=(-float(r.statistic),)), NumPart("p-value", float(r.pvalue), "p")]
    return _spec("stat_test", c.tpl(tpl).format(p=ds.vpath), "", parts, ds)


def s_chi2(c: Ctx) -> Spec:
    from scipy import stats

    ds = c.ds["survey_responses.csv"]
    chi2, p, _dof, _ = stats.chi2_contingency(pd.crosstab(ds.df.plan, ds.df.would_recommend))
    tpl = [
        "Is would_recommend independent of plan in {p}? Run a chi-square test of independence on the plan x "
        "would_recommend contingency table and give the chi-square statistic and the p-value.",
        "Using {p}, test whether plan and would_recommend are associated (chi-square test of independence). "
        "Statistic and p?",
        "{p}: chi2_contingency(crosstab(plan, would_recommend)) - chi2 and p?",
    ]
    parts = [NumPart("chi-square", float(chi2)), NumPart("p-value", float(p), "p")]
    return _spec("stat_test", c.tpl(tpl).format(p=ds.vpath), "", parts, ds)


def s_shapiro(c: Ctx) -> Spec:
    from scipy import stats

    ds = c.ds["lab_samples.jsonl"]
    r = stats.shapiro(ds.df.ph.dropna())
    tpl = [
        "Are the pH values in {p} normally distributed? Run a Shapiro-Wilk test (after dropping missing values) and "
        "report W and the p-value.",
        "Check normality of ph in {p} with the Shapiro-Wilk test, ignoring empty values. What are the statistic and "
        "p-value?",
        "{p}: shapiro(ph.dropna()) -> W, p?",
    ]
    parts = [NumPart("W", float(r.statistic)), NumPart("p-value", float(r.pvalue), "p")]
    return _spec("stat_test", c.tpl(tpl).format(p=ds.vpath), "", parts, ds)


def s_paired(c: Ctx) -> Spec:
    from scipy import stats

    ds = c.ds["bp_trial.csv"]
    tr = ds.df[ds.df.arm == "treatment"]
    r = stats.ttest_rel(tr.bp_before, tr.bp_after)
    tpl = [
        "For the treatment arm in {p}, run a paired t-test of bp_before against bp_after. What are t and the p-value?",
        "Did blood pressure change in the treatment group of {p}? Paired t-test (before vs after): t statistic and "
        "p-value please.",
        "{p}: ttest_rel(bp_before, bp_after) for arm == treatment?",
    ]
    parts = [NumPart("t", float(r.statistic), alts=(-float(r.statistic),)), NumPart("p-value", float(r.pvalue), "p")]
    return _spec("stat_test", c.tpl(tpl).format(p=ds.vpath), "", parts, ds)


def s_ols(c: Ctx) -> Spec:
    from sklearn.linear_model import LinearRegression

    ds = c.ds["ad_spend.csv"]
    lr = LinearRegression().fit(ds.df[["tv_spend"]], ds.df["sales"])
    fmt = Fmt("decimals", 2)
    tpl = [
        "Fit a simple linear regression of sales on tv_spend in {p} (ordinary least squares, e.g. sklearn "
        "LinearRegression). What are the slope and the intercept?",
        "Using {p}, regress weekly sales on TV spend (sales = a + b * tv_spend, OLS). Give b and a.",
        "{p}: OLS line sales ~ tv_spend - slope and intercept?",
    ]
    q = _with_fmt(c, c.tpl(tpl).format(p=ds.vpath), fmt)
    parts = [NumPart("slope", float(lr.coef_[0]), fmt=fmt), NumPart("intercept", float(lr.intercept_), fmt=fmt)]
    return _spec("model", q, "", parts, ds, stated=True)


def _split_acc(df: pd.DataFrame, feats: list[str], target: str, model: Any) -> float:
    from sklearn.metrics import accuracy_score
    from sklearn.model_selection import train_test_split

    x_tr, x_te, y_tr, y_te = train_test_split(df[feats], df[target], test_size=0.25, random_state=42)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(x_tr, y_tr)
    return float(accuracy_score(y_te, model.predict(x_te)))


def s_logit(c: Ctx) -> Spec:
    from sklearn.linear_model import LogisticRegression

    ds = c.ds["loans.csv"]
    feats = ["income_k", "loan_amount_k", "credit_score", "years_employed"]
    acc = _split_acc(ds.df, feats, "defaulted", LogisticRegression(max_iter=1000))
    tpl = [
        "Train a classifier on {p} to predict defaulted from {f} (features in that order). Split with "
        "train_test_split(test_size=0.25, random_state=42), fit LogisticRegression(max_iter=1000), and report the "
        "test-set accuracy.",
        "Using {p}: X = columns {f}; y = defaulted. train_test_split(X, y, test_size=0.25, random_state=42), then "
        "LogisticRegression(max_iter=1000) with otherwise default settings. What accuracy does it get on the test "
        "split?",
        "{p}: test accuracy of LogisticRegression(max_iter=1000) predicting defaulted from {f}, "
        "train_test_split(test_size=0.25, random_state=42)?",
    ]
    q = c.tpl(tpl).format(p=ds.vpath, f=", ".join(feats))
    return _spec("model", q, "", [NumPart("test accuracy", acc, "share")], ds)


def s_tree(c: Ctx) -> Spec:
    from sklearn.tree import DecisionTreeClassifier

    ds = c.ds["students.csv"]
    feats = ["hours_studied", "attendance_pct", "math_score", "reading_score"]
    acc = _split_acc(ds.df, feats, "passed", DecisionTreeClassifier(random_state=0))
    tpl = [
        "Predict passed from {f} (in that order) in {p} with DecisionTreeClassifier(random_state=0). Use "
        "train_test_split(test_size=0.25, random_state=42). What is the accuracy on the test set?",
        "How accurate is a decision tree (DecisionTreeClassifier(random_state=0), defaults otherwise) at predicting "
        "passed in {p}? Features: {f}; split: train_test_split(test_size=0.25, random_state=42).",
        "{p}: DecisionTreeClassifier(random_state=0), X={f}, y=passed, train_test_split(test_size=0.25, "
        "random_state=42) -> test accuracy?",
    ]
    q = c.tpl(tpl).format(p=ds.vpath, f=", ".join(feats))
    return _spec("model", q, "", [NumPart("test accuracy", acc, "share")], ds)


def s_multireg(c: Ctx) -> Spec:
    from sklearn.linear_model import LinearRegression

    ds = c.ds["listings.tsv"]
    x = ds.df[["Sqft", "Bedrooms"]]
    lr = LinearRegression().fit(x, ds.df.Price)
    tpl = [
        "Fit a linear regression of Price on Sqft and Bedrooms in {p} (OLS with intercept). What is the coefficient "
        "of Sqft, and what is the R² of the fit on all rows?",
        "Using {p}, model Price = b0 + b1*Sqft + b2*Bedrooms by least squares. Report b1 and the R-squared.",
        "{p}: LinearRegression().fit(df[['Sqft','Bedrooms']], df['Price']) - Sqft coefficient and R^2 (on the same "
        "data)?",
    ]
    parts = [
        NumPart("Sqft coefficient", float(lr.coef_[0]), distractors=[float(lr.coef_[1]), float(lr.intercept_)]),
        NumPart("R²", float(lr.score(x, ds.df.Price))),
    ]
    return _spec("model", c.tpl(tpl).format(p=ds.vpath), "", parts, ds)


def s_join_segments(c: Ctx) -> Spec:
    o, cu = c.ds["orders.jsonl"], c.ds["customers.csv"]
    tot = o.df.merge(cu.df, on="customer_id").groupby("segment").amount_paid.sum()
    tpl = [
        "Join {a} with {b} on customer_id and give the total amount_paid for each customer segment.",
        "What's the total revenue (sum of amount_paid) per segment? Orders are in {a}, the segment of each customer "
        "is in {b}.",
        "{a} + {b} (key customer_id): sum of amount_paid by segment?",
    ]
    parts = [
        NumPart(str(k), float(v), near=(str(k),), near_others=[(str(j),) for j in tot.index if j != k])
        for k, v in tot.items()
    ]
    return _spec("join", c.tpl(tpl).format(a=o.vpath, b=cu.vpath), "", parts, [o, cu])


def s_join_insurance(c: Ctx) -> Spec:
    v, pa = c.ds["hospital_visits.xlsx"], c.ds["patients.csv"]
    means = v.df.merge(pa.df, on="Patient ID").groupby("Insurance")["Total Cost"].mean()
    spec = g_rank(c, v, "Insurance", means, "average Total Cost per visit", with_value=True, kind="join", files=[v, pa])
    tpl = [
        "Visits are in {a} and each patient's insurance is in {b} (match on Patient ID). Which insurance type has "
        "the highest average Total Cost per visit, and what is that average?",
        "Combine {a} with {b} using Patient ID. Which Insurance group has the largest mean visit cost? Give the "
        "mean too.",
        "{a} joined to {b} on 'Patient ID': insurance with max mean Total Cost (+ value)?",
    ]
    spec.question = c.tpl(tpl).format(a=v.vpath, b=pa.vpath)
    return spec


def s_join_states(c: Ctx) -> Spec:
    f, ap = c.ds["flights_2022.csv"], c.ds["airports.csv"]
    m = f.df.merge(ap.df, left_on="origin", right_on="code")
    vc = m.state.value_counts()
    tpl = [
        "Using {a} and the airport list in {b}, how many flights departed from each state? (Match origin to code.)",
        "Count flights by the state of their origin airport. Flights: {a}; airports (code, city, state): {b}.",
        "{a} joined with {b} (origin = code): number of departures per state?",
    ]
    parts = [
        NumPart(str(k), int(n), "int", near=(str(k),), near_others=[(str(j),) for j in vc.index if j != k])
        for k, n in vc.items()
    ]
    return _spec("join", c.tpl(tpl).format(a=f.vpath, b=ap.vpath), "", parts, [f, ap])


def s_join_conference(c: Ctx) -> Spec:
    ps, tm = c.ds["player_stats.csv"], c.ds["teams.csv"]
    m = ps.df[ps.df.season == 2023].merge(tm.df, on="team")
    tot = m.groupby("conference").points.sum()
    tpl = [
        "What were the total points per conference in the 2023 season? Player stats are in {a}; {b} says which "
        "conference each team plays in.",
        "Join {a} to {b} on team and sum points by conference, for season 2023 only.",
        "{a} x {b} on team -> season 2023 points by conference?",
    ]
    parts = [
        NumPart(str(k), float(v), near=(str(k),), near_others=[(str(j),) for j in tot.index if j != k])
        for k, v in tot.items()
    ]
    return _spec("join", c.tpl(tpl).format(a=ps.vpath, b=tm.vpath), "", parts, [ps, tm])


def s_margin(c: Ctx) -> Spec:
    ds = c.ds["products.xlsx"]
    margin = (ds.df["Unit Price"] - ds.df["Unit Cost"]) / ds.df["Unit Price"]
    fmt = Fmt("percent", 1)
    tpl = [
        "Add a margin column to {p}, defined as (Unit Price - Unit Cost) / Unit Price. What is the average margin?",
        "For each product in {p} compute margin = (price - cost) / price using the Unit Price and Unit Cost "
        "columns, then tell me the mean margin.",
        "{p}: new col margin = (Unit Price - Unit Cost)/Unit Price; mean?",
    ]
    q = _with_fmt(c, c.tpl(tpl).format(p=ds.vpath), fmt)
    part = NumPart("mean margin", float(margin.mean()), "share", fmt=fmt, distractors=[float(margin.median())])
    return _spec("new_column", q, "", [part], ds, stated=True)


def s_age_groups(c: Ctx) -> Spec:
    ds = c.ds["hospital_visits.xlsx"]
    labels = ["child", "adult", "senior"]
    grp = pd.cut(ds.df.Age, [-1, 17, 64, 200], labels=labels)
    vc = grp.value_counts()
    tpl = [
        "Add an age_group column to {p}: child for Age under 18, adult for 18 to 64, senior for 65 and over. How "
        "many visits fall in each group?",
        "Bin the Age column of {p} into child (0-17), adult (18-64) and senior (65+) and count the visits per bin.",
        "{p}: age groups child <18, adult 18-64, senior >=65 - counts?",
    ]
    parts = [
        NumPart(lb, int(vc[lb]), "int", near=(lb,), near_others=[(o,) for o in labels if o != lb]) for lb in labels
    ]
    return _spec("new_column", c.tpl(tpl).format(p=ds.vpath), "", parts, ds)


def s_tip_pct_file(c: Ctx) -> Spec:
    ds = c.ds["tips.csv"]
    df = ds.df.copy()
    df["tip_pct"] = df.tip / df.total_bill * 100
    out = f"{OUT}/tips_with_pct.csv"
    tpl = [
        "Add a column tip_pct = tip / total_bill * 100 to {p}, save the table with the new column to {out}, and "
        "tell me the mean tip_pct.",
        "In {p}, create tip_pct (the tip as a percentage of total_bill, i.e. tip / total_bill * 100). Write the "
        "full table including tip_pct to {out}. What's the average tip_pct?",
        "{p}: add tip_pct = 100*tip/total_bill, write it all to {out}; mean tip_pct?",
    ]
    parts = [
        NumPart("mean tip_pct", float(df.tip_pct.mean()), distractors=[float(df.tip_pct.median())]),
        TablePart("table with tip_pct", out, df, "bill_id"),
        NoFailPart(),
    ]
    return _spec("new_column", c.tpl(tpl).format(p=ds.vpath, out=out), "", parts, ds, outputs=[out])


def s_revenue_file(c: Ctx) -> Spec:
    ds = c.ds["sales.csv"]
    df = ds.df.copy()
    df["revenue"] = df.quantity * df.unit_price
    out = f"{OUT}/sales_with_revenue.parquet"
    tpl = [
        "Add a revenue column (quantity * unit_price) to {p}, save the result as Parquet at {out}, and give me the "
        "total revenue.",
        "Please compute revenue = quantity × unit_price for every order in {p}; write the table with that new "
        "revenue column to {out} (Parquet). What does revenue add up to?",
        "{p} -> add revenue=quantity*unit_price, save to {out}, total revenue?",
    ]
    parts = [
        NumPart("total revenue", float(df.revenue.sum()), distractors=[float(df.revenue.mean())]),
        TablePart("table with revenue", out, df, "order_id"),
        NoFailPart(),
    ]
    return _spec("new_column", c.tpl(tpl).format(p=ds.vpath, out=out), "", parts, ds, outputs=[out])


def s_line_chart(c: Ctx) -> Spec:
    ds = c.ds["building_energy.parquet"]
    tot = ds.df.groupby(pd.to_datetime(ds.df.month)).kwh.sum()
    out = f"{OUT}/monthly_kwh.png"
    img = _chart(lambda ax: (ax.plot(tot.index, tot.values), ax.set_ylabel("kWh")))
    tpl = [
        "Plot total kwh per month (all buildings summed) from {p} as a line chart and save it to {out}.",
        "Using {p}, draw a line chart of monthly total energy use over time. Save it as {out}.",
        "{p}: line plot of summed kwh by month -> {out}",
    ]
    parts = [ImagePart("line chart", out, img), NoFailPart()]
    return _spec("chart", c.tpl(tpl).format(p=ds.vpath, out=out), "", parts, ds, outputs=[out], action=True)


def s_scatter_svg(c: Ctx) -> Spec:
    ds = c.ds["listings.tsv"]
    out = f"{OUT}/price_vs_sqft.svg"
    img = _chart(lambda ax: (ax.scatter(ds.df.Sqft, ds.df.Price, s=4), ax.set_xlabel("Sqft")), "svg")
    tpl = [
        "Make a scatter plot of Price against Sqft from {p} and save it as an SVG at {out}.",
        "I want to see how asking price relates to size in {p}: scatter Sqft (x) vs Price (y), saved to {out}.",
        "{p}: scatter Sqft vs Price, save {out} (svg)",
    ]
    parts = [ImagePart("scatter plot", out, img), NoFailPart()]
    return _spec("chart", c.tpl(tpl).format(p=ds.vpath, out=out), "", parts, ds, outputs=[out], action=True)


def s_dedup_file(c: Ctx) -> Spec:
    ds = c.ds["contacts.csv"]
    out = f"{OUT}/contacts_dedup.csv"
    exp = ds.df.drop_duplicates().reset_index(drop=True)
    tpl = [
        "Remove exact duplicate rows from {p} (keep the first copy) and save the cleaned table to {out}.",
        "{p} has repeated rows. Drop rows that are identical in every column, keeping one, and write the result to "
        "{out}.",
        "dedupe {p} (drop_duplicates, all columns) -> {out}",
    ]
    parts = [TablePart("de-duplicated table", out, exp, "contact_id"), NoFailPart()]
    return _spec("clean_file", c.tpl(tpl).format(p=ds.vpath, out=out), "", parts, ds, outputs=[out], action=True)


def s_dropna_file(c: Ctx) -> Spec:
    ds = c.ds["lab_samples.jsonl"]
    out = f"{OUT}/lab_complete.csv"
    exp = ds.df.dropna().reset_index(drop=True)
    tpl = [
        "Drop every row of {p} that has a missing value in any column and save the rest as CSV to {out}.",
        "Keep only the complete samples from {p} (no empty fields) and write them to {out}.",
        "{p}: dropna() and save as {out}",
    ]
    parts = [TablePart("complete rows", out, exp, "sample_id"), NoFailPart()]
    return _spec("clean_file", c.tpl(tpl).format(p=ds.vpath, out=out), "", parts, ds, outputs=[out], action=True)


def _report_question(c: Ctx, ds: DS, asks: list[str], out: str) -> str:
    numbered = " ".join(f"({i}) {a}." for i, a in enumerate(asks, 1))
    tpl = [
        "Write a short Markdown report on {p} to {out} with just these answers: {lst}.",
        "Please analyse {p} and save a brief report (Markdown) at {out} covering: {numbered}",
        "Create {out}: a concise .md summary of {p} that states {lst}.",
    ]
    return c.tpl(tpl).format(p=ds.vpath, out=out, lst=_join(asks), numbered=numbered)


def _join(xs: list[str]) -> str:
    if len(xs) <= 2:
        return " and ".join(xs)
    return ", ".join(xs[:-1]) + ", and " + xs[-1]


def s_report_sales(c: Ctx) -> tuple[list[Spec], str, str]:
    ds = c.ds["sales.csv"]
    rev = _revenue(ds)
    phrase = _rev_phrase(c)
    tot = NumPart("total revenue", float(rev.sum()), distractors=[float(rev.mean())])
    specs = [
        g_rows(c, ds),
        _spec("report", "", f"the total {phrase}", [tot], ds),
        g_rank(c, ds, "region", rev.groupby(ds.df.region).sum(), "total revenue", kind="report"),
    ]
    out = f"{OUT}/sales_report.md"
    asks = ["the number of orders", f"the total {phrase}", "which region has the highest total revenue"]
    return specs, _report_question(c, ds, asks, out), out


def s_report_weather(c: Ctx) -> tuple[list[Spec], str, str]:
    ds = c.ds["weather_stations.tsv"]
    means = ds.df.groupby("Station")["Temp (C)"].mean()
    rank = g_rank(c, ds, "Station", means, "average Temp (C)", kind="report")
    precip = NumPart(
        "total precipitation", float(ds.df["Precip (mm)"].sum()), distractors=[float(ds.df["Precip (mm)"].mean())]
    )
    miss = NumPart("missing temperature readings", int(ds.df["Temp (C)"].isna().sum()), "int")
    specs = [rank, _spec("report", "", "", [precip], ds), _spec("report", "", "", [miss], ds)]
    out = f"{OUT}/weather_summary.md"
    asks = [
        "the station with the highest average Temp (C)",
        "the total Precip (mm) over all stations and days",
        "how many Temp (C) readings are missing",
    ]
    return specs, _report_question(c, ds, asks, out), out


def s_report_hr(c: Ctx) -> tuple[list[Spec], str, str]:
    ds = c.ds["employees.xlsx"]
    med = ds.df.groupby("Department").Salary.median()
    specs = [
        g_rows(c, ds),
        g_stat(c, ds, "Salary", "mean"),
        g_rank(c, ds, "Department", med, "median Salary", kind="report"),
    ]
    out = f"{OUT}/hr_report.md"
    asks = ["the headcount (number of employees)", "the mean Salary", "the department with the highest median Salary"]
    return specs, _report_question(c, ds, asks, out), out


# ---------------------------------------------------------------------------------------------------------------------
# plans


def _single_plan(c: Ctx) -> list[tuple[str, Callable[[], Any]]]:
    d = c.ds
    sales, taxi, web, players = d["sales.csv"], d["taxi_trips.parquet"], d["web_sessions.jsonl"], d["player_stats.csv"]
    listings, energy, products, flights = (
        d["listings.tsv"],
        d["building_energy.parquet"],
        d["products.xlsx"],
        d["flights_2022.csv"],
    )

    def bottom_products() -> Spec:
        agg = _revenue(sales).groupby(sales.df["product"]).sum()
        return g_rank(c, sales, "product", agg, _rev_phrase(c), n=3, top=False)

    def top_listings() -> Spec:
        agg = (listings.df.Price / listings.df.Sqft).set_axis(listings.df["Listing ID"])
        return g_rank(
            c, listings, "Listing ID", agg, "price per square foot (Price / Sqft)", n=5, ordered=True, max_d=10
        )

    def top_teams() -> Spec:
        agg = players.df[players.df.season == 2023].groupby("team").points.sum()
        return g_rank(c, players, "team", agg, "total points in the 2023 season", n=3, with_value=True)

    def top_page() -> Spec:
        agg = web.df.groupby("landingPage").durationSec.mean()
        return g_rank(c, web, "landingPage", agg, "average session duration (durationSec)")

    jfk = (flights.df.origin == "JFK") & (flights.df.dep_delay > 60)
    elec = products.df.Category == "Electronics"
    stock_max = int(np.ceil(products.df.Stock[elec].quantile(0.3) / 10) * 10)
    low = elec & (products.df.Stock < stock_max)
    return [
        ("count", lambda: g_rows(c, d["sensor_readings.parquet"])),
        ("count", lambda: g_distinct(c, web, "country")),
        ("count", lambda: g_distinct(c, d["orders.jsonl"], "customer_id")),
        ("filter", lambda: s_filter_city(c)),
        ("filter", lambda: s_filter_month(c)),
        ("filter", lambda: s_filter_after(c)),
        ("filter", lambda: s_filter_hired(c)),
        ("spread", lambda: g_stat(c, taxi, "fare_amount", "median", fmt=Fmt("template", 2, "median"))),
        ("spread", lambda: g_stat(c, d["weather_stations.tsv"], "Wind Speed (km/h)", "pct", 90)),
        ("spread", lambda: g_stat(c, d["students.csv"], "math_score", "std")),
        ("topn", bottom_products),
        ("topn", top_listings),
        ("topn", top_teams),
        ("topn", top_page),
        ("share", lambda: s_share_converted(c)),
        ("share", lambda: g_share_total(c, sales, "region", "West", _revenue(sales), _rev_phrase(c))),
        ("share", lambda: g_share_level(c, d["sensor_readings.parquet"], "status", "fault")),
        ("derived_group", lambda: g_month(c, sales, _revenue(sales), _rev_phrase(c), 2023, with_value=True)),
        ("derived_group", lambda: s_weekday_counts(c)),
        ("derived_group", lambda: s_bins(c)),
        ("derived_group", lambda: s_year_totals(c)),
        ("difference", lambda: s_yoy(c)),
        ("difference", lambda: s_ratio(c)),
        ("difference", lambda: s_two_files(c)),
        ("difference", lambda: s_type_increase(c)),
        ("correlation", lambda: g_corr(c, d["tips.csv"], "total_bill", "tip")),
        ("correlation", lambda: g_corr(c, players, "minutes", "points", fmt=Fmt("decimals", 3))),
        ("correlation", lambda: g_corr(c, energy, "kwh", "floor_area_m2")),
        ("missing", lambda: s_missing_per_col(c)),
        ("missing", lambda: g_missing_most(c, flights)),
        ("missing", lambda: g_missing_share(c, d["lab_samples.jsonl"], "concentration_mg_l", fmt=Fmt("percent", 1))),
        ("duplicates", lambda: g_dup_rows(c, d["contacts.csv"])),
        ("duplicates", lambda: s_dup_emails(c)),
        ("duplicates", lambda: s_dedup_remaining(c)),
        ("outliers", lambda: g_zscore(c, d["sensor_readings.parquet"], "vibration", 3.0)),
        ("outliers", lambda: g_iqr(c, taxi, "fare_amount")),
        ("outliers", lambda: g_iqr(c, d["hospital_visits.xlsx"], "Total Cost", fence=True, fmt=Fmt("decimals", 0))),
        ("stat_test", lambda: s_welch(c)),
        ("stat_test", lambda: s_student(c)),
        ("stat_test", lambda: s_chi2(c)),
        ("stat_test", lambda: s_shapiro(c)),
        ("stat_test", lambda: s_paired(c)),
        ("model", lambda: s_ols(c)),
        ("model", lambda: s_logit(c)),
        ("model", lambda: s_tree(c)),
        ("model", lambda: s_multireg(c)),
        ("join", lambda: s_join_segments(c)),
        ("join", lambda: s_join_insurance(c)),
        ("join", lambda: s_join_states(c)),
        ("join", lambda: s_join_conference(c)),
        ("new_column", lambda: s_margin(c)),
        ("new_column", lambda: s_age_groups(c)),
        ("new_column", lambda: s_tip_pct_file(c)),
        ("new_column", lambda: s_revenue_file(c)),
        ("chart", lambda: g_bar_chart(c, sales, "region", _revenue(sales), "total revenue", "revenue_by_region.png")),
        ("chart", lambda: s_line_chart(c)),
        ("chart", lambda: g_hist(c, taxi, "trip_distance", "trip_distance_hist.png")),
        ("chart", lambda: s_scatter_svg(c)),
        ("clean_file", lambda: s_dedup_file(c)),
        ("clean_file", lambda: s_dropna_file(c)),
        (
            "clean_file",
            lambda: g_clean_rows(
                c,
                flights,
                jfk,
                "origin is JFK and dep_delay is greater than 60",
                ["flight_id", "date", "carrier", "dest", "dep_delay"],
                "jfk_delays.csv",
            ),
        ),
        (
            "clean_file",
            lambda: g_clean_rows(
                c,
                products,
                low,
                f'Category is "Electronics" and Stock is below {stock_max}',
                None,
                "low_stock_electronics.xlsx",
            ),
        ),
        ("report", lambda: s_report_sales(c)),
        ("report", lambda: s_report_weather(c)),
        ("report", lambda: s_report_hr(c)),
    ]


def _measures(ds: DS) -> list[tuple[pd.Series, str]]:
    out = [(ds.df[col], str(col)) for col in ds.sums]
    if ds.name == "sales.csv":
        out.append((_revenue(ds), "revenue (quantity × unit_price)"))
    return out


def _slug(x: str) -> str:
    return "".join(ch if ch.isalnum() else "_" for ch in x.lower()).strip("_")


def _mp_candidates(c: Ctx, ds: DS, tag: str) -> list[tuple[str, Callable[[], Spec | None]]]:
    df, rng = ds.df, c.rng
    stem = ds.name.split(".")[0]
    maybe = lambda fmt: fmt if rng.random() < 0.25 else None  # noqa: E731
    out: list[tuple[str, Callable[[], Spec | None]]] = [("count", lambda: g_rows(c, ds))]
    groups = [k for k in ds.cats if 3 <= df[k].nunique() <= 15]
    for k in ds.cats:
        if df[k].nunique() >= 3:
            out.append(("count", lambda k=k: g_distinct(c, ds, k)))
    for col in ds.nums:
        out += [
            (
                "spread",
                lambda col=col: g_stat(
                    c,
                    ds,
                    col,
                    c.choice(["mean", "median", "std", "pct"]),
                    q=int(c.choice([90, 95, 75, 10])),
                    fmt=maybe(Fmt("decimals", 2)),
                ),
            ),
            ("filter", lambda col=col: g_filter_num(c, ds, col, above=bool(rng.random() < 0.7))),
            ("chart", lambda col=col: g_hist(c, ds, col, f"{stem}_{_slug(col)}_{tag}.png")),
        ]
        if df[col].nunique() > 50:
            out += [
                ("outliers", lambda col=col: g_zscore(c, ds, col, float(c.choice([3.0, 2.5])))),
                ("outliers", lambda col=col: g_iqr(c, ds, col)),
            ]
        if ds.key:
            thr, inclusive = _threshold(df[col].dropna(), 0.9)
            mask, _, isword, _ = _cmp(df[col], thr, True, inclusive)
            cond = f"{col} is {isword} {_t(thr)}"
            out.append(
                (
                    "clean_file",
                    lambda mask=mask, cond=cond: g_clean_rows(c, ds, mask, cond, None, f"{stem}_{tag}_filtered.csv"),
                )
            )
    for k in groups:
        levels = sorted(df[k].dropna().unique(), key=str)
        for s, ph in _measures(ds):
            out += [
                (
                    "topn",
                    lambda k=k, s=s, ph=ph: g_rank(
                        c,
                        ds,
                        k,
                        s.groupby(df[k]).sum(),
                        f"total {ph}",
                        top=bool(rng.random() < 0.7),
                        with_value=bool(rng.random() < 0.4),
                    ),
                ),
                (
                    "share",
                    lambda k=k, s=s, ph=ph, lv=levels: g_share_total(
                        c, ds, k, str(c.choice(lv)), s, ph, fmt=maybe(Fmt("percent", 1))
                    ),
                ),
                ("chart", lambda k=k, s=s, ph=ph: g_bar_chart(c, ds, k, s, f"total {ph}", f"{stem}_{tag}_bars.png")),
            ]
        for col in ds.nums:
            out += [
                (
                    "topn",
                    lambda k=k, col=col: g_rank(
                        c, ds, k, df.groupby(k)[col].mean(), f"average {col}", top=bool(rng.random() < 0.6)
                    ),
                ),
                (
                    "filter",
                    lambda k=k, col=col, lv=levels: g_filter_cat(
                        c, ds, k, str(c.choice(lv)), col, want_count=bool(rng.random() < 0.5)
                    ),
                ),
            ]
        out.append(("share", lambda k=k, lv=levels: g_share_level(c, ds, k, c.choice(lv))))
    cm = df[ds.nums].corr() if len(ds.nums) > 1 else pd.DataFrame()
    for i, a in enumerate(ds.nums):
        for b in ds.nums[i + 1 :]:
            if abs(cm.loc[a, b]) > 0.15:
                out.append(("correlation", lambda a=a, b=b: g_corr(c, ds, a, b, fmt=maybe(Fmt("decimals", 3)))))
    if ds.date:
        dt = pd.to_datetime(df[ds.date])
        years = sorted(dt.dt.year.unique())
        for s, ph in _measures(ds):
            out.append(
                (
                    "derived_group",
                    lambda s=s, ph=ph: g_month(
                        c,
                        ds,
                        s,
                        f"total {ph}",
                        int(c.choice(years)),
                        top=bool(rng.random() < 0.7),
                        with_value=bool(rng.random() < 0.4),
                    ),
                )
            )
        if dt.dt.day.nunique() > 1:
            out.append(("derived_group", lambda: g_weekday_top(c, ds, top=bool(rng.random() < 0.6))))
    na = df.isna().sum()
    if (na > 0).sum() >= 3:
        out.append(("missing", lambda: g_missing_most(c, ds)))
    for col in na[na > 0].index:
        out.append(("missing", lambda col=col: g_missing_share(c, ds, str(col), fmt=maybe(Fmt("percent", 2)))))
    if (na > 0).any():
        out.append(("missing", lambda: g_missing_rows(c, ds)))
    if df.duplicated().any():
        out.append(("duplicates", lambda: g_dup_rows(c, ds)))
    return out


def _fmt_short(fmt: Fmt) -> str:
    if fmt.style == "percent":
        return f"as a percentage with {fmt.decimals} decimal{'s' if fmt.decimals > 1 else ''}"
    if fmt.style == "thousands":
        return f"in thousands with {fmt.decimals} decimal, like 12.3k"
    if fmt.style == "template":
        return f"in the form `{fmt.key}=<value>`, {fmt.decimals} decimals"
    return f"rounded to {fmt.decimals} decimal{'s' if fmt.decimals != 1 else ''}"


def _texts(spec: Spec) -> str:
    return spec.clause + "\n" + "\n".join(p.perfect() for p in spec.parts)


def _conflict(a: Spec, b: Spec) -> bool:
    from .checks import name_positions, normalize

    for x, y in ((a, b), (b, a)):
        text = normalize(_texts(y))
        for p in x.parts:
            aliases = [al for al in p.names] if isinstance(p, NamePart) else []
            aliases += [p.near] if isinstance(p, NumPart) and p.near else []
            if any(name_positions(text, al, getattr(p, "case", False)) for al in aliases):
                return True
    return a.clause == b.clause


MP_DATASETS = [
    "sales.csv",
    "tips.csv",
    "weather_stations.tsv",
    "employees.xlsx",
    "sensor_readings.parquet",
    "students.csv",
    "web_sessions.jsonl",
    "flights_2022.csv",
    "hospital_visits.xlsx",
    "building_energy.parquet",
    "orders.jsonl",
    "listings.tsv",
    "player_stats.csv",
    "products.xlsx",
    "survey_responses.csv",
    "taxi_trips.parquet",
    "lab_samples.jsonl",
    "contacts.csv",
]


def _multipart(c: Ctx, i: int, ds: DS) -> tuple[list[Spec], str, str | None]:
    rng = c.rng
    want = int(c.choice([2, 3, 3]))
    report = (
        f"{OUT}/{ds.name.split('.')[0]}_{c.choice(['summary', 'findings', 'report', 'answers'])}_{i}.md"
        if i % 3 == 0
        else None
    )
    allow_action = rng.random() < 0.35
    cands = _mp_candidates(c, ds, f"mp{i}")
    specs: list[Spec] = []
    kinds: set[str] = set()
    for j in rng.permutation(len(cands)):
        kind, fn = cands[int(j)]
        action = kind in ("chart", "clean_file")
        if kind in kinds or (action and (not allow_action or any(s.action for s in specs))):
            continue
        try:
            spec = fn()
        except AssertionError:
            continue
        if spec is None or any(_conflict(spec, s) for s in specs):
            continue
        spec.kind = kind
        if spec.stated:
            fmt = next(p.fmt for p in spec.parts if getattr(p, "fmt", None))
            spec.clause += f" ({_fmt_short(fmt)})"
        specs.append(spec)
        kinds.add(kind)
        if len(specs) == want:
            break
    asks = [s.clause for s in specs if not s.action]
    acts = [s.clause for s in specs if s.action]
    numbered = " ".join(f"({n}) {a}?" for n, a in enumerate(asks, 1))
    if report:
        tpl = [
            "Analyse {p} and write a short Markdown report to {out} with just these answers: {lst}.",
            "Work out {lst} for the data in {p}; write the answers to a short report at {out} (Markdown).",
            "Please create {out}, a brief Markdown report on {p} that answers: {numbered}",
        ]
    else:
        tpl = [
            "Using {p}, tell me {lst}.",
            "I've uploaded {p}. Could you work out {lst}?",
            "A few questions about {p}: {numbered}",
            "Please look at {p} and report {lst}.",
            "{p} - I need {lst}.",
        ]
    q = str(c.choice(tpl)).format(p=ds.vpath, out=report, lst=_join(asks), numbered=numbered)
    if acts:
        q = _then(q, "Also, " + _join(acts) + ".")
    return specs, q, report


def _assemble(kind: str, n: int, specs: list[Spec], question: str, report: str | None = None) -> Task:
    text_parts: list[Any] = []
    file_parts: list[Any] = []
    groups: list[tuple[Spec, set[int]]] = []
    nofail = report is not None
    for s in specs:
        idx = set()
        for p in s.parts:
            if isinstance(p, NumPart | NamePart):
                idx.add(len(text_parts))
                text_parts.append(p)
            elif isinstance(p, NoFailPart):
                nofail = True
            else:
                file_parts.append(p)
        groups.append((s, idx))
    if report:
        parts: list[Any] = [ReportPart(report, text_parts), *file_parts]
    else:
        parts = [*text_parts, *file_parts]
    if nofail:
        parts.append(NoFailPart())
    checker = Checker(parts, question)
    # a dump is a wrong answer only where the checker can tell: some part has two or more distractors
    dumps = [(idx, s.dump) for s, idx in groups if s.dump and distractor_count(s.parts) >= 2]
    if report:
        parts[0].dumps = dumps
    lines = [p.perfect() for p in parts]
    text = lambda ls: "\n".join(f"- {x}" for x in ls if x)  # noqa: E731
    outputs: dict[str, bytes] = {}
    for p in parts:
        outputs.update(p.files())
    wrong: list[tuple[str, str, dict[str, bytes | None]]] = []
    for i, p in enumerate(parts):
        for why, line, over in p.wrongs():
            wrong.append((f"{p.label}: {why}", text(lines[:i] + [line] + lines[i + 1 :]), {**outputs, **over}))
    if not report:
        for idx, dump in dumps:
            kept = [ln for i, ln in enumerate(lines) if i not in idx]
            wrong.append(("dump", text(kept) + "\n\n" + dump, dict(outputs)))
    files = list(dict.fromkeys(f for s in specs for f in s.files))
    outs = [o for s in specs for o in s.outputs] + ([report] if report else [])
    return Task(
        id=f"{kind}-{n}",
        kind=kind,
        files=files,
        question=question,
        expected="; ".join(p.expected() for p in parts),
        check=checker,
        outputs_expected=outs,
        multipart=kind == "multipart",
        stated_format=any(s.stated for s in specs),
        perfect=text(lines),
        perfect_outputs=outputs,
        wrong_answers=wrong,
        parts=parts,
    )


def generate(folder: Path, seed: int = 0, multipart: int = 27) -> list[Task]:
    """Write the data files into folder and return the tasks (deterministic per seed)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    c = Ctx(folder, seed)
    build_datasets(c)
    tasks: list[Task] = []
    counts: dict[str, int] = {}
    for kind, fn in _single_plan(c):
        counts[kind] = counts.get(kind, 0) + 1
        c.variant = counts[kind] - 1
        res = fn()
        if kind == "report":
            specs, question, out = res
            tasks.append(_assemble(kind, counts[kind], specs, question, report=out))
        else:
            res.kind = kind
            tasks.append(_assemble(kind, counts[kind], [res], res.question))
    order = [MP_DATASETS[int(j)] for j in c.rng.permutation(len(MP_DATASETS))]
    for i in range(multipart):
        c.variant = i
        specs, question, report = _multipart(c, i + 1, c.ds[order[i % len(order)]])
        tasks.append(_assemble("multipart", i + 1, specs, question, report=report))
    return tasks
