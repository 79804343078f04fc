"""Which skills are enabled.

Two layers: ``extensions_config.json`` (``skills: {name: {enabled}}``) is operator
configuration shared by every user; ``{home}/users/{user}/skills/state.json`` holds
the user's own choices and overrides it. ``enable``/``disable`` from the SDK write
only the per-user file, so one user never changes another's agent. A skill with no
entry in either layer is enabled.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path

from deerflow_nb.config.extensions import load_extensions_config, resolve_extensions_path
from deerflow_nb.errors import ConfigError
from deerflow_nb.utils.files import atomic_write_text

__all__ = ["SkillStateStore"]

_VERSION = 1


class SkillStateStore:
    """Reads the operator layer and reads/writes one user's layer."""

    def __init__(self, user_state_file: Path, extensions_path: Path | None = None) -> None:
        self.user_state_file = user_state_file
        self.extensions_path = extensions_path
        self._lock = threading.Lock()

    def operator_file(self) -> Path | None:
        """The extensions file in effect (``None`` when there is none)."""
        try:
            return resolve_extensions_path(self.extensions_path)
        except FileNotFoundError:
            return None

    def operator_states(self) -> dict[str, bool]:
        """``name -> enabled`` from ``extensions_config.json``."""
        path = self.operator_file()
        if path is None:
            return {}
        return {name: entry.enabled for name, entry in load_extensions_config(path).skills.items()}

    def user_states(self) -> dict[str, bool]:
        """``name -> enabled`` from the user's ``state.json``.

        Raises:
            ConfigError: the file exists but is not valid (it is never silently replaced).
        """
        try:
            raw = json.loads(self.user_state_file.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, json.JSONDecodeError) as exc:
            raise ConfigError(f"{self.user_state_file}: invalid skill state file: {exc}",
                              path=str(self.user_state_file)) from None
        skills = raw.get("skills") if isinstance(raw, dict) else None
        if not isinstance(skills, dict):
            raise ConfigError(f"{self.user_state_file}: expected {{'skills': {{name: {{'enabled': bool}}}}}}",
                              key="skills", path=str(self.user_state_file))
        states = {}
        for name, entry in skills.items():
            if isinstance(entry, dict) and isinstance(entry.get("enabled"), bool):
                states[str(name)] = entry["enabled"]
        return states

    def effective(self) -> dict[str, bool]:
        """The merged map: the user's choice wins over the operator's."""
        return {**self.operator_states(), **self.user_states()}

    def set_enabled(self, name: str, enabled: bool) -> None:
        """Record the user's choice for ``name`` (atomic write)."""
        with self._lock:
            states = self.user_states()
            states[name] = enabled
            doc = {"version": _VERSION, "skills": {k: {"enabled": v} for k, v in sorted(states.items())}}
            atomic_write_text(self.user_state_file, json.dumps(doc, indent=2) + "\n")

    def forget(self, name: str) -> None:
        """Drop the user's entry for ``name`` (after an uninstall)."""
        with self._lock:
            states = self.user_states()
            if states.pop(name, None) is None:
                return
            doc = {"version": _VERSION, "skills": {k: {"enabled": v} for k, v in sorted(states.items())}}
            atomic_write_text(self.user_state_file, json.dumps(doc, indent=2) + "\n")
