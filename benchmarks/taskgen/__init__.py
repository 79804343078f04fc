"""Benchmark questions for a data-analysis agent: ``generate(folder, seed)`` writes data files, returns tasks."""

from .tasks import KINDS, Task, generate

__all__ = ["KINDS", "Task", "generate"]
