"""The environment a sandboxed command sees, and masking of injected values.

Commands never inherit secret-looking variables from the host process: a platform
credential such as ``OPENAI_API_KEY`` must not reach a skill's script. Values a caller
injects on purpose (request-scoped secrets) are layered on top and masked in output.

Every provider (local, bubblewrap, docker) builds its command environment with
:func:`build_sandbox_env` and masks output with :func:`mask_values`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping

__all__ = [
    "HEADLESS_ENV",
    "MASK",
    "build_sandbox_env",
    "is_secret_name",
    "looks_like_credential_value",
    "mask_values",
]

MASK = "***"

# Set for every sandboxed command (an injected value of the same name wins): analysis code
# runs headless, so matplotlib must not look for a display or inherit a notebook kernel's
# inline backend (``module://matplotlib_inline...``), which only works inside the kernel.
HEADLESS_ENV: Mapping[str, str] = {"MPLBACKEND": "Agg"}

# Substrings that mark a variable name as secret, matched case-insensitively.
# "PASS" also covers PASSWORD, PASSWD and PGPASSFILE.
_SECRET_SUBSTRINGS = (
    "KEY",
    "SECRET",
    "TOKEN",
    "PASS",
    "CREDENTIAL",
    "DSN",
    "AUTH",
    "COOKIE",
    "PRIVATE",
)

# Whole names (or prefixes) of well-known credential sources that the substrings miss.
_SECRET_NAMES = frozenset(
    {
        "MYSQL_PWD",
        "PGSERVICEFILE",
        "GH_PAT",
        "NETRC",
        "KUBECONFIG",
        "DOCKER_CONFIG",
    }
)
# Cloud credential families: every AWS_* variable, Azure service-principal settings.
_SECRET_PREFIXES = ("AWS_", "AZURE_CLIENT_", "AZURE_TENANT_")

# Connection strings routinely embed a password: DATABASE_URL, REDIS_URL, MONGODB_URI, ...
_CONNECTION_NAME = re.compile(
    r"(^|_)(DATABASE|DB|REDIS|MONGO|MONGODB|POSTGRES|POSTGRESQL|PG|MYSQL|AMQP|RABBITMQ|BROKER|"
    r"CELERY_BROKER|CELERY_RESULT_BACKEND|SENTRY|SQLALCHEMY_DATABASE|ELASTICSEARCH|KAFKA)_(URL|URI)$"
)
# A personal access token (GH_PAT, GITLAB_PAT) or a password (DB_PWD; PWD itself is the cwd).
_PAT_NAME = re.compile(r"((^|_)PAT|_PWD)$")
# Any value of the form scheme://user:password@host carries a credential whatever its name.
_URL_WITH_PASSWORD = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://[^/\s:@]*:[^/\s@]+@")

# Names that must survive even though a pattern would match them (none of the usual
# benign variables do today; listed so a future pattern cannot silently drop them).
_ALWAYS_KEEP = frozenset({"PATH", "HOME", "LANG", "LANGUAGE", "TERM", "TZ", "USER", "LOGNAME", "SHELL"})


def is_secret_name(name: str) -> bool:
    """Whether an environment variable name looks like it holds a credential."""
    upper = name.upper()
    if upper in _ALWAYS_KEEP or upper.startswith("LC_"):
        return False
    if upper in _SECRET_NAMES or upper.startswith(_SECRET_PREFIXES):
        return True
    if any(part in upper for part in _SECRET_SUBSTRINGS):
        return True
    return bool(_CONNECTION_NAME.search(upper) or _PAT_NAME.search(upper))


def looks_like_credential_value(value: str) -> bool:
    """Whether a value embeds a password, e.g. ``postgres://user:pw@host/db``."""
    return bool(_URL_WITH_PASSWORD.match(value))


def build_sandbox_env(
    extra: Mapping[str, str] | None = None, base: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The environment for one sandboxed command.

    Args:
        extra: values injected on purpose (request-scoped secrets); they are kept
            even when their names look secret, and replace host values of the same name.
        base: the environment to inherit from (default: ``os.environ``).

    Returns:
        ``base`` without secret-looking names or credential-bearing URLs, with
        ``extra`` layered on top. ``PATH``, ``HOME``, ``LANG``, ``LC_*``,
        ``VIRTUAL_ENV``, ``TERM`` and other benign variables are preserved.
    """
    source = os.environ if base is None else base
    env = {
        name: value
        for name, value in source.items()
        if not is_secret_name(name) and not looks_like_credential_value(value)
    }
    if extra:
        for name, value in extra.items():
            if not isinstance(name, str) or not name or "=" in name or "\0" in name:
                raise ValueError(f"invalid environment variable name {name!r}")
            if not isinstance(value, str):
                kind = type(value).__name__
                raise ValueError(f"environment variable {name!r} must be a string, got {kind}")
            env[name] = value
    return env


def mask_values(text: str, values: Iterable[str]) -> str:
    """Replace every occurrence of each non-empty value in ``text`` with ``***``.

    Longer values are masked first so a value containing a shorter one is hidden whole.
    Every non-empty value is masked, even a short one: an injected value is a secret
    by contract, and revealing it matters more than an over-masked output.
    """
    unique = sorted({v for v in values if v}, key=len, reverse=True)
    for value in unique:
        if value in text:
            text = text.replace(value, MASK)
    return text
