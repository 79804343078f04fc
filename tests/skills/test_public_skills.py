"""The skills shipped in skills/public: valid metadata, and their scripts work on small generated data."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from deerflow_nb.config.paths import packaged_skills_root
from deerflow_nb.skills import install_skill_archive, load_skills

ROOT = packaged_skills_root()
EXPECTED = {"data-analysis", "chart-visualization", "report-writing", "skill-creator"}


def subprocess_run(skill: str, script: str, *args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    path = ROOT / skill / "scripts" / script
    return subprocess.run([sys.executable, str(path), *map(str, args)], cwd=cwd, capture_output=True, text=True,
                          timeout=120)


@pytest.fixture
def run(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch):
    """Run a script's ``main(argv)`` in-process (pandas is imported once, not per script)."""

    def _run(skill: str, script: str, *args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
        monkeypatch.chdir(cwd)
        monkeypatch.setattr(sys, "path", list(sys.path))  # the scripts prepend their own folder
        monkeypatch.setattr(sys, "dont_write_bytecode", sys.dont_write_bytecode)
        path = ROOT / skill / "scripts" / script
        spec = importlib.util.spec_from_file_location(f"skill_{skill}_{path.stem}".replace("-", "_"), path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        capsys.readouterr()
        try:
            code = module.main([str(a) for a in args])
        except SystemExit as exc:
            if isinstance(exc.code, str):
                print(exc.code, file=sys.stderr)
            code = exc.code if isinstance(exc.code, int) else 1
        out = capsys.readouterr()
        return subprocess.CompletedProcess(args, code, out.out, out.err)

    return _run


@pytest.fixture
def sales(tmp_path: Path) -> Path:
    rows = ["region,month,revenue,units"]
    for i in range(24):
        region = ["north", "south", "east"][i % 3]
        revenue = "" if i == 5 else str(100 + i * 10)
        rows.append(f"{region},2024-{(i % 12) + 1:02d},{revenue},{i % 7}")
    rows.append(rows[1])  # one duplicate row
    path = tmp_path / "sales.csv"
    path.write_text("\n".join(rows) + "\n")
    return path


def test_public_skills_parse_and_declare_tools():
    skills = {s.name: s for s in load_skills(ROOT, None)}
    assert EXPECTED <= set(skills)
    for name in EXPECTED:
        assert skills[name].allowed_tools and "bash" in skills[name].allowed_tools
        assert "/mnt/skills/public/" in skills[name].read_body()


def test_data_analysis_profile_and_query(sales: Path, tmp_path: Path, run):
    result = run("data-analysis", "profile.py", sales, "--output", tmp_path / "out/sales_profile", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    profile = json.loads((tmp_path / "out/sales_profile.json").read_text())
    assert profile["rows"] == 25 and profile["columns"] == 4 and profile["duplicate_rows"] == 1
    revenue = next(c for c in profile["column_profiles"] if c["name"] == "revenue")
    assert revenue["missing"] == 1 and revenue["stats"]["max"] == 330.0
    region = next(c for c in profile["column_profiles"] if c["name"] == "region")
    assert region["unique"] == 3
    assert "| revenue | float64 | 1 (4.0%) |" in (tmp_path / "out/sales_profile.md").read_text()

    sql = "SELECT region, SUM(units) AS units FROM data GROUP BY region ORDER BY region"
    result = run("data-analysis", "query.py", sales, sql, "--output", tmp_path / "out/units.csv", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "3 row(s)" in result.stdout
    lines = (tmp_path / "out/units.csv").read_text().splitlines()
    assert lines[0] == "region,units" and len(lines) == 4
    bad = run("data-analysis", "query.py", sales, "SELECT nope FROM data", cwd=tmp_path)
    assert bad.returncode == 1 and "the query failed" in bad.stderr


def test_data_analysis_reads_excel_and_parquet(sales: Path, tmp_path: Path, run):
    pd = pytest.importorskip("pandas")
    frame = pd.read_csv(sales)
    for name, writer in (("sales.xlsx", "to_excel"), ("sales.parquet", "to_parquet")):
        try:
            getattr(frame, writer)(tmp_path / name, index=False)
        except ImportError:
            continue
        result = run("data-analysis", "profile.py", tmp_path / name, "--output", tmp_path / name, cwd=tmp_path)
        assert result.returncode == 0, result.stderr
        assert json.loads((tmp_path / f"{name}.json").read_text())["rows"] == 25


def test_chart_visualization_writes_images(sales: Path, tmp_path: Path, run):
    pytest.importorskip("matplotlib")
    out = tmp_path / "charts"
    ok = run("chart-visualization", "chart.py", sales, "--kind", "bar", "--x", "region", "--y", "revenue",
             "--agg", "sum", "--sort", "--output", out / "bar.png", cwd=tmp_path)
    assert ok.returncode == 0, ok.stderr
    assert (out / "bar.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    svg = run("chart-visualization", "chart.py", sales, "--kind", "line", "--x", "month", "--y", "revenue",
              "--hue", "region", "--output", out / "line.svg", cwd=tmp_path)
    assert svg.returncode == 0, svg.stderr
    assert "<svg" in (out / "line.svg").read_text()
    hist = run("chart-visualization", "chart.py", sales, "--kind", "hist", "--x", "units", "--output",
               out / "hist.png", cwd=tmp_path)
    assert hist.returncode == 0 and "25 point(s)" in hist.stdout
    missing = run("chart-visualization", "chart.py", sales, "--kind", "bar", "--x", "nope", "--y", "revenue",
                  "--output", out / "x.png", cwd=tmp_path)
    assert missing.returncode != 0 and "column 'nope' not found" in missing.stderr


def test_report_writing_builds_markdown_and_html(sales: Path, tmp_path: Path, run):
    pytest.importorskip("matplotlib")
    out = tmp_path / "outputs"
    run("data-analysis", "profile.py", sales, "--output", out / "sales_profile", cwd=tmp_path)
    run("chart-visualization", "chart.py", sales, "--kind", "bar", "--x", "region", "--y", "revenue", "--agg",
        "sum", "--output", out / "chart.png", cwd=tmp_path)
    table = out / "top.csv"
    table.write_text("region,revenue\nnorth,900\nsouth,800\n")
    findings = tmp_path / "findings.md"
    findings.write_text("- North leads with **900** revenue.\n")
    result = run("report-writing", "build_report.py", "--title", "Sales review", "--summary", "North leads.",
                 "--findings", findings, "--table", f"Top regions={table}", "--image", f"Revenue={out / 'chart.png'}",
                 "--profile", out / "sales_profile.json", "--output", out / "report.md", "--html", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    report = (out / "report.md").read_text()
    assert report.startswith("# Sales review") and "![Revenue](chart.png)" in report
    assert "| north | 900 |" in report and "25 rows, 4 columns" in report
    page = (out / "report.html").read_text()
    assert "<strong>900</strong>" in page and "data:image/png;base64," in page and "<table>" in page
    missing = run("report-writing", "build_report.py", "--title", "x", "--findings", tmp_path / "nope.md",
                  "--output", out / "r.md", cwd=tmp_path)
    assert missing.returncode == 1 and "does not exist" in missing.stderr


def test_skill_creator_scaffolds_packages_and_the_archive_installs(tmp_path: Path):
    run = subprocess_run
    result = run("skill-creator", "init_skill.py", "churn-report", "--description", "Monthly churn report.",
                 "--path", tmp_path / "ws", "--allowed-tools", "bash,read_file", "--secret", "CRM_TOKEN",
                 cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    folder = tmp_path / "ws/churn-report"
    hello = subprocess.run([sys.executable, str(folder / "scripts/example.py"), "--name", "ada"],
                           capture_output=True, text=True)
    assert hello.stdout.strip() == "hello ada from churn-report"
    packed = run("skill-creator", "package_skill.py", folder, "--output", tmp_path / "out", cwd=tmp_path)
    assert packed.returncode == 0, packed.stderr
    skill = install_skill_archive(tmp_path / "out/churn-report.skill", tmp_path / "custom")
    assert skill.name == "churn-report" and skill.allowed_tools == ("bash", "read_file")
    assert [r.name for r in skill.required_secrets] == ["CRM_TOKEN"]
    again = run("skill-creator", "init_skill.py", "churn-report", "--description", "x", "--path", tmp_path / "ws",
                cwd=tmp_path)
    assert again.returncode != 0 and "already exists" in again.stderr
    bad = run("skill-creator", "init_skill.py", "Bad_Name", "--description", "x", cwd=tmp_path)
    assert bad.returncode != 0 and "not a valid skill name" in bad.stderr
    (folder / ".env").write_text("CRM_TOKEN=oops")
    leak = run("skill-creator", "package_skill.py", folder, "--output", tmp_path / "out2", cwd=tmp_path)
    assert leak.returncode != 0 and "looks like a secret" in leak.stderr


def test_table_command_matches_pandas(sales: Path, tmp_path: Path, run):
    import pandas as pd

    df = pd.read_csv(sales)
    result = run("data-analysis", "table.py", "stats", sales, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert f"{len(df)} rows, 4 columns (region, month, revenue, units)" in result.stdout
    mean = df.revenue.mean()
    assert f"revenue: count {df.revenue.count()}, sum {int(df.revenue.sum())}, mean {mean:.2f}" in result.stdout
    result = run("data-analysis", "table.py", "group", sales, "--by", "region", "--value", "revenue*units",
                 "--top", "2", cwd=tmp_path)
    totals = (df.revenue * df.units).groupby(df.region).sum().sort_values(ascending=False)
    lines = result.stdout.splitlines()
    assert lines[0] == f"overall sum: {int((df.revenue * df.units).sum())}"
    assert lines[2:] == [f"1. {totals.index[0]}: {int(totals.iloc[0])}", f"2. {totals.index[1]}: {int(totals.iloc[1])}"]
    # "total_units" means units; a count needs no value column
    counted = run("data-analysis", "table.py", "group", sales, "--by", "region", "--value", "rows", cwd=tmp_path)
    assert counted.stdout.splitlines()[0] == f"overall count: {len(df)}"
    assert run("data-analysis", "table.py", "stats", sales, "--column", "total_units",
               cwd=tmp_path).stdout.endswith(f"units: count {len(df)}, sum {df.units.sum()}, "
                                             f"mean {df.units.mean():.2f}, min 0, max 6\n")


def test_table_command_writes_a_report_and_names_unknown_columns(sales: Path, tmp_path: Path, run):
    report = tmp_path / "out" / "report.md"
    result = run("data-analysis", "table.py", "group", sales, "--by", "region", "--value", "units",
                 "--report", report, cwd=tmp_path)
    assert result.returncode == 0 and f"wrote the report {report}" in result.stdout
    text = report.read_text()
    assert "| units | 25 |" in text and "## Sum of units by region" in text and "| **overall** | **" in text
    assert not list(report.parent.glob(".*"))  # written through a temporary file, renamed
    bad = run("data-analysis", "table.py", "group", sales, "--by", "region", "--value", "price", cwd=tmp_path)
    assert bad.returncode == 1
    assert "no column 'price'; the columns are: region, month, revenue, units" in bad.stderr
