"""Runs the Argo CD health checks of the Trellis kinds
(examples/gitops/argocd/*-health.lua) on sample objects, under
Lua 5.1 as Argo CD's interpreter speaks it, and checks the health each gets.

    python scripts/check_health_lua.py     # needs the lupa wheel
"""

import sys
from pathlib import Path

import lupa.lua51 as lua51

DIR = Path(__file__).resolve().parent.parent / "examples/gitops/argocd"


def condition(kind, status, reason="", message=""):
    return {"type": kind, "status": status, "reason": reason, "message": message or reason}


def obj(status, generation=2):
    o = {"metadata": {"name": "x", "generation": generation}}
    if status is not None:
        o["status"] = status
    return o


CASES = {
    "corpus-health.lua": [
        (obj(None), "Progressing"),
        (obj({"observedGeneration": 1, "conditions": []}), "Progressing"),
        (obj({"observedGeneration": 2, "conditions": [condition("Paused", "True", "PausedByAnnotation")]}), "Suspended"),
        (obj({"observedGeneration": 2, "conditions": [
            condition("Ready", "False", "Ingesting"), condition("Ingesting", "True", "JobRunning")]}), "Progressing"),
        (obj({"observedGeneration": 2, "conditions": [
            condition("Ready", "True", "IndexActive"), condition("Ingesting", "True", "JobRunning")]}), "Progressing"),
        (obj({"observedGeneration": 2, "conditions": [
            condition("Ready", "False", "IngestFailed", "Job failed"), condition("Ingesting", "False", "IngestFailed")]}), "Degraded"),
        (obj({"observedGeneration": 2, "conditions": [
            condition("Ready", "True", "IndexActive", "index version v1"),
            condition("Degraded", "True", "DocumentsFailed", "1 documents failed")]}), "Healthy"),
        (obj({"observedGeneration": 2, "conditions": [condition("Ready", "True", "IndexActive", "v1")]}), "Healthy"),
    ],
    "indexprofile-health.lua": [
        (obj(None), "Progressing"),
        (obj({"conditions": [condition("Valid", "True", "SpecValid")]}), "Healthy"),
        (obj({"conditions": [condition("Valid", "False", "SpecInvalid", "minTokens above maxTokens")]}), "Degraded"),
        (obj({"conditions": [condition("Paused", "True", "PausedByAnnotation")]}), "Suspended"),
    ],
    "retrievalroute-health.lua": [
        (obj(None), "Progressing"),
        (obj({"observedGeneration": 1, "conditions": [condition("Available", "True")]}), "Progressing"),
        (obj({"observedGeneration": 2, "servedVersion": "v1", "conditions": [
            condition("Available", "True", "MinimumReplicasAvailable"), condition("Progressing", "False", "RolloutComplete")]}), "Healthy"),
        (obj({"observedGeneration": 2, "conditions": [
            condition("Available", "True"), condition("Progressing", "True", "NewTemplate")]}), "Progressing"),
        (obj({"observedGeneration": 2, "conditions": [
            condition("Available", "False", "CorpusNotFound"), condition("Progressing", "False", "CorpusNotFound")]}), "Degraded"),
        (obj({"observedGeneration": 2, "conditions": [condition("Paused", "True")]}), "Suspended"),
    ],
}


def to_lua(runtime, value):
    if isinstance(value, dict):
        table = runtime.table()
        for k, v in value.items():
            table[k] = to_lua(runtime, v)
        return table
    if isinstance(value, list):
        table = runtime.table()
        for i, v in enumerate(value, start=1):
            table[i] = to_lua(runtime, v)
        return table
    return value


def main():
    failures = 0
    for script, cases in CASES.items():
        source = (DIR / script).read_text()
        for i, (sample, expected) in enumerate(cases):
            runtime = lua51.LuaRuntime(unpack_returned_tuples=True)
            runtime.globals().obj = to_lua(runtime, sample)
            result = runtime.execute(source)
            status = result["status"] if result is not None else None
            message = result["message"] if result is not None else None
            if status != expected or not isinstance(message, str):
                failures += 1
                print(f"{script} case {i}: got {status!r} ({message!r}), expected {expected!r}")
        print(f"{script}: {len(cases)} cases")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
