"""Checks the chart's monitoring parts for real: renders the chart with
helm, then

- with the default values: neither the PrometheusRule nor the dashboard
  ConfigMap is there (both are off by default);
- with both switched on, over the defaults and over
  charts/trellis/tests/monitoring-values.yaml: `promtool check rules` on
  the PrometheusRule's groups, and on every query of the dashboard (each
  panel's expression, with Grafana's variables filled in, as a recording
  rule), and the ConfigMap carries the sidecar's label;
- `promtool test rules` on charts/trellis/tests/alerts-test.yaml against
  the rules rendered with monitoring-values.yaml.

That every metric these name is exported is a Rust unit test
(operator::telemetry).

    python scripts/check_monitoring.py CHART HELM PROMTOOL
"""

import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

KUBE_VERSION = "1.33.0"

# Grafana's variables, as a query sees them when they are filled in.
GRAFANA_VARIABLES = {
    "$__rate_interval": "2m",
    "$__interval": "1m",
    "$__range": "6h",
    "$namespace": ".*",
    "$route": ".*",
    "$corpus": ".*",
}


def render(helm, chart, values=(), settings=()):
    # A helm built from its module knows no cluster's version: name one the
    # chart's kubeVersion accepts.
    command = [helm, "template", "trellis", str(chart), "--namespace", "trellis", "--kube-version", KUBE_VERSION]
    for file in values:
        command += ["--values", str(file)]
    for setting in settings:
        command += ["--set", setting]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit(f"helm template failed: {result.stderr.strip()}")
    out = result.stdout
    return [d for d in yaml.safe_load_all(out) if d]


def one(documents, kind, what):
    found = [d for d in documents if d.get("kind") == kind]
    if len(found) != 1:
        raise SystemExit(f"{what}: {len(found)} {kind} objects rendered, expected 1")
    return found[0]


def promtool(binary, *args, cwd=None):
    result = subprocess.run([binary, *args], cwd=cwd, capture_output=True, text=True)
    if result.returncode != 0:
        print(result.stdout + result.stderr, file=sys.stderr)
        raise SystemExit(f"promtool {' '.join(args)} failed")
    return result.stdout


def dashboard_queries(dashboard):
    """(where, expression) of every panel target, rows' panels included."""
    panels = list(dashboard["panels"])
    for panel in dashboard["panels"]:
        panels.extend(panel.get("panels", []))
    queries = []
    for panel in panels:
        for target in panel.get("targets", []):
            queries.append((f"panel {panel['id']} ({panel['title']}) {target['refId']}", target["expr"]))
    for variable in dashboard.get("templating", {}).get("list", []):
        query = variable.get("query")
        if isinstance(query, dict):
            query = query.get("query", "")
        # label_values(SELECTOR, label): the selector is PromQL.
        match = re.fullmatch(r"label_values\((.*),\s*\w+\)", query or "")
        if match:
            queries.append((f"variable {variable['name']}", match.group(1)))
    return queries


def fill(expression):
    for variable in sorted(GRAFANA_VARIABLES, key=len, reverse=True):
        expression = expression.replace(variable, GRAFANA_VARIABLES[variable])
    left = re.findall(r"\$\w+|\$\{\w+\}", expression)
    if left:
        raise SystemExit(f"dashboard query uses variables this check does not know: {left}: {expression}")
    return expression


def check_dashboard(config_map, label, value, work, binary, what):
    labels = config_map["metadata"].get("labels", {})
    if labels.get(label) != value:
        raise SystemExit(f"{what}: dashboard ConfigMap lacks the label {label}: {value!r}: {labels}")
    (name, text), = config_map["data"].items()
    dashboard = json.loads(text)
    ids = [p["id"] for p in dashboard["panels"]]
    if len(ids) != len(set(ids)):
        raise SystemExit(f"{what}: dashboard panel ids repeat: {ids}")
    queries = dashboard_queries(dashboard)
    rules = [
        {"record": f"dashboard:query_{i}", "expr": fill(expr), "labels": {"where": where}}
        for i, (where, expr) in enumerate(queries)
    ]
    file = work / "dashboard-rules.yaml"
    file.write_text(yaml.safe_dump({"groups": [{"name": "dashboard", "rules": rules}]}))
    promtool(binary, "check", "rules", str(file))
    print(f"{what}: dashboard {name}: {len(queries)} queries parse")


def check_rules(rule, work, binary, what):
    file = work / "rules.yaml"
    file.write_text(yaml.safe_dump({"groups": rule["spec"]["groups"]}))
    promtool(binary, "check", "rules", str(file))
    alerts = [r["alert"] for g in rule["spec"]["groups"] for r in g["rules"]]
    print(f"{what}: rules pass promtool check: {', '.join(alerts)}")
    return alerts


def main():
    chart, helm, binary = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
    tests = chart / "tests"

    defaults = render(helm, chart)
    kinds = {d["kind"] for d in defaults}
    if "PrometheusRule" in kinds or any(
        d["kind"] == "ConfigMap" and d["metadata"]["name"].endswith("-dashboard") for d in defaults
    ):
        raise SystemExit("the PrometheusRule or dashboard is rendered with the default values; both are off by default")

    on = ["metrics.prometheusRule.enabled=true", "grafana.dashboard.enabled=true"]
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        documents = render(helm, chart, settings=on)
        alerts = check_rules(one(documents, "PrometheusRule", "defaults"), work, binary, "defaults")
        if len(alerts) != 3:
            raise SystemExit(f"defaults: expected three alerts, got {alerts}")
        check_dashboard(dashboard_map(documents),
                        "grafana_dashboard", "1", work, binary, "defaults")

        overlay = tests / "monitoring-values.yaml"
        documents = render(helm, chart, values=[overlay])
        check_rules(one(documents, "PrometheusRule", overlay.name), work, binary, overlay.name)
        values = yaml.safe_load(overlay.read_text())["grafana"]["dashboard"]
        check_dashboard(dashboard_map(documents), values["label"], values["labelValue"], work, binary, overlay.name)
        for test in sorted(tests.glob("*-test.yaml")):
            shutil.copy(test, work / test.name)
            out = promtool(binary, "test", "rules", test.name, cwd=work)
            print(f"{test.name}: {out.strip().splitlines()[-1] if out.strip() else 'passed'}")


def dashboard_map(documents):
    found = [d for d in documents if d.get("kind") == "ConfigMap" and d["metadata"]["name"].endswith("-dashboard")]
    if len(found) != 1:
        raise SystemExit(f"{len(found)} dashboard ConfigMaps rendered, expected 1")
    return found[0]


if __name__ == "__main__":
    main()
