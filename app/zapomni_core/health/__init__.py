"""Readiness checks: is every dependency of the memory server there and answering?

Each check is a plain async function over an injected dependency that returns a one-line detail
or raises; `run_check` adds the timeout, the latency and the sanitising, so a check never raises
and never hangs. `HealthChecker` holds the dependencies, built once by `open_health_checker`.

The checker only observes. In embedded mode it talks to the server on the data directory's
socket when one is running and never starts one (`zapomni serve` owns that). Connections are
made lazily and dropped when they fail, so a database that comes back is seen without a restart.
"""

from zapomni_core.health.checker import HealthChecker, open_health_checker
from zapomni_core.health.checks import check_falkordb, expected_schema_version, missing_models
from zapomni_core.health.probes import DatabaseProbe
from zapomni_core.health.results import CheckResult, Report, run_check, sanitise
from zapomni_db import DatabaseTarget

__all__ = [
    "CheckResult",
    "DatabaseProbe",
    "DatabaseTarget",
    "HealthChecker",
    "Report",
    "check_falkordb",
    "expected_schema_version",
    "missing_models",
    "open_health_checker",
    "run_check",
    "sanitise",
]
