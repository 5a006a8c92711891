"""Lints a chart with Helm's library (helm_sdkpy): once as it is, and once
per values overlay that switches optional parts on, so that every template
branch renders. Prints Helm's messages; exits 1 on any error or warning.

    python scripts/lint_chart.py charts/trellis
"""

import asyncio
import shutil
import sys
import tempfile
from pathlib import Path

import helm_sdkpy

# Values overlays beside the defaults: every optional template on, the
# namespaced mode, and everything off.
OVERLAYS = {
    "defaults": None,
    "everything-on": {
        "metrics": {
            "serviceMonitor": {"enabled": True, "labels": {"release": "prom"}},
            "podMonitor": {"enabled": True, "labels": {"release": "prom"}},
            "prometheusRule": {"enabled": True, "labels": {"release": "prom"}, "alertLabels": {"team": "search"}},
        },
        "grafana": {"dashboard": {"enabled": True, "folder": "Search", "namespace": "monitoring"}},
        "networkPolicy": {
            "enabled": True,
            "metricsFrom": [{"namespaceSelector": {}}],
            "apiServerCIDRs": ["10.0.0.1/32"],
        },
        "dataVolume": {"create": True, "storageClassName": "nfs"},
        "serviceAccount": {"annotations": {"example.com/role": "trellis"}},
        "podAnnotations": {"example.com/scrape": "true"},
        "imagePullSecrets": [{"name": "registry"}],
        "priorityClassName": "system-cluster-critical",
    },
    "namespaced": {
        "watchNamespace": "-,team-a",
        "replicaCount": 1,
        "leaderElection": {"enabled": False},
        "metrics": {"podMonitor": {"enabled": True}},
    },
    "crds-off": {"crds": {"install": False}, "serviceAccount": {"create": False, "name": "existing"}},
}


def merge(base, overlay):
    for key, value in overlay.items():
        if isinstance(value, dict) and isinstance(base.get(key), dict):
            merge(base[key], value)
        else:
            base[key] = value
    return base


def lint(path):
    config = helm_sdkpy.Configuration()
    return asyncio.run(helm_sdkpy.Lint(config).run(str(path)))


# Helm's support.Severity: 1 info, 2 warning, 3 error.
SEVERITY = {1: "info", 2: "warning", 3: "error"}


def problems(result):
    """The warnings and errors of a lint result. The library serialises
    Go errors as empty objects, so a problem names its file and severity
    only; `helm lint` on the same chart gives the text."""
    found = []
    for message in result.get("Messages") or []:
        severity = int(message.get("Severity", 0))
        if severity >= 2:
            detail = message.get("Err") or ""
            found.append(
                f"{SEVERITY.get(severity, severity)}: {message.get('Path', '')} {detail or ''}".rstrip()
            )
    if result.get("Errors") and not found:
        found.append(f"error: {len(result['Errors'])} lint errors")
    return found


def version_problems(chart):
    """The chart's appVersion must be the crate's version: the release
    workflow tags the image, the chart and its appVersion with one version,
    and refuses a tag where the two differ."""
    import tomllib

    import yaml

    manifest = Path(__file__).resolve().parent.parent / "Cargo.toml"
    crate = tomllib.loads(manifest.read_text())["package"]["version"]
    app = str(yaml.safe_load((chart / "Chart.yaml").read_text()).get("appVersion"))
    if app != crate:
        return [f"error: Chart.yaml's appVersion is {app}, the crate's version ({manifest}) is {crate}"]
    return []


def main():
    chart = Path(sys.argv[1] if len(sys.argv) > 1 else "charts/trellis")
    import yaml

    found = version_problems(chart)
    print(f"{chart} [appVersion]: {'ok' if not found else found[0]}")
    failed = bool(found)
    for name, overlay in OVERLAYS.items():
        with tempfile.TemporaryDirectory() as tmp:
            copy = Path(tmp) / chart.name
            shutil.copytree(chart, copy)
            if overlay is not None:
                values = yaml.safe_load((copy / "values.yaml").read_text())
                (copy / "values.yaml").write_text(yaml.safe_dump(merge(values, overlay)))
            result = lint(copy)
        found = problems(result)
        if result.get("TotalChartsLinted") != 1:
            found.append(f"error: {result.get('TotalChartsLinted')} charts linted, expected 1")
        print(f"{chart} [{name}]: {'ok' if not found else f'{len(found)} problems'}")
        for line in found:
            print(f"  {line}")
        failed |= bool(found)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
