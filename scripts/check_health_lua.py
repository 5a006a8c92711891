"""Runs the Argo CD health check of the Trellis kinds
(examples/gitops/argocd/trellis-health.lua) on sample objects of each kind, under
Lua 5.1 as Argo CD's interpreter speaks it, and checks the health each gets.

    python scripts/check_health_lua.py     # needs the lupa wheel
"""

import json
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
    "Corpus": [
        (obj(None), "Progressing"),
        (obj({"observedGeneration": 1, "conditions": []}), "Progressing"),
        (obj({"observedGeneration": 2, "conditions": [condition("Paused", "True", "PausedByAnnotation")]}), "Suspended"),
        # Paused, then edited: still Suspended, not waiting for a generation.
        (obj({"observedGeneration": 1, "conditions": [condition("Paused", "True", "PausedByAnnotation")]}), "Suspended"),
        (obj({"observedGeneration": 2, "conditions": [
            condition("Ready", "False", "Ingesting"), condition("Ingesting", "True", "JobRunning"),
            condition("Reconciling", "True", "JobRunning")]}), "Progressing"),
        (obj({"observedGeneration": 2, "conditions": [
            condition("Ready", "True", "IndexActive"), condition("Ingesting", "True", "JobRunning"),
            condition("Reconciling", "True", "JobRunning")]}), "Progressing"),
        (obj({"observedGeneration": 2, "conditions": [
            condition("Ready", "False", "IngestFailed", "Job failed"), condition("Ingesting", "False", "IngestFailed"),
            condition("Stalled", "True", "IngestFailed", "Job failed")]}), "Degraded"),
        (obj({"observedGeneration": 2, "conditions": [
            condition("Ready", "True", "IndexActive", "index version v1"),
            condition("Degraded", "True", "DocumentsFailed", "1 documents failed")]}), "Healthy"),
        (obj({"observedGeneration": 2, "conditions": [condition("Ready", "True", "IndexActive", "v1")]}), "Healthy"),
    ],
    "IndexProfile": [
        (obj(None), "Progressing"),
        (obj({"observedGeneration": 2, "conditions": [
            condition("Valid", "True", "SpecValid"), condition("Ready", "True", "SpecValid")]}), "Healthy"),
        (obj({"observedGeneration": 2, "conditions": [
            condition("Valid", "False", "SpecInvalid", "minTokens above maxTokens"),
            condition("Ready", "False", "SpecInvalid", "minTokens above maxTokens"),
            condition("Stalled", "True", "SpecInvalid", "minTokens above maxTokens")]}), "Degraded"),
        (obj({"conditions": [condition("Paused", "True", "PausedByAnnotation")]}), "Suspended"),
    ],
    "RetrievalRoute": [
        (obj(None), "Progressing"),
        (obj({"observedGeneration": 1, "conditions": [condition("Available", "True"), condition("Ready", "True")]}), "Progressing"),
        (obj({"observedGeneration": 2, "servedVersion": "v1", "conditions": [
            condition("Available", "True", "MinimumReplicasAvailable"), condition("Progressing", "False", "RolloutComplete"),
            condition("Ready", "True", "Serving")]}), "Healthy"),
        (obj({"observedGeneration": 2, "conditions": [
            condition("Available", "True"), condition("Progressing", "True", "NewTemplate"),
            condition("Ready", "False", "NewTemplate"), condition("Reconciling", "True", "NewTemplate")]}), "Progressing"),
        # A rollout past its deadline while old pods still serve: not Healthy.
        (obj({"observedGeneration": 2, "conditions": [
            condition("Available", "True", "MinimumReplicasAvailable"),
            condition("Progressing", "False", "ProgressDeadlineExceeded", "ReplicaSet has timed out progressing."),
            condition("Ready", "False", "ProgressDeadlineExceeded"),
            condition("Stalled", "True", "ProgressDeadlineExceeded", "ReplicaSet has timed out progressing.")]}), "Degraded"),
        (obj({"observedGeneration": 2, "conditions": [
            condition("Available", "False", "CorpusNotFound"), condition("Progressing", "False", "CorpusNotFound"),
            condition("Ready", "False", "CorpusNotFound"), condition("Stalled", "True", "CorpusNotFound")]}), "Degraded"),
        (obj({"observedGeneration": 2, "conditions": [condition("Paused", "True")]}), "Suspended"),
        (obj({"observedGeneration": 1, "conditions": [condition("Paused", "True"), condition("Ready", "True")]}), "Suspended"),
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


SCRIPT = "trellis-health.lua"
LIVE = Path(__file__).resolve().parent.parent / "target/e2e/health"


def live_cases():
    """Objects the end-to-end suite kept from the real control plane, each
    with the health it expects (tests/e2e/scenarios/health.rs)."""
    cases = {}
    for path in sorted(LIVE.glob("*.json")) if LIVE.is_dir() else []:
        sample = json.loads(path.read_text())
        cases.setdefault(sample["kind"], []).append((sample["object"], sample["expected"]))
    return cases


def main():
    failures = 0
    live = live_cases()
    if live:
        print(f"live objects from the e2e run: {sum(len(c) for c in live.values())}")
    else:
        print("live objects from the e2e run: none (run `cargo test --test e2e` first)")
    source = (DIR / SCRIPT).read_text()
    for kind, cases in CASES.items():
        cases = cases + live.get(kind, [])
        for i, (sample, expected) in enumerate(cases):
            runtime = lua51.LuaRuntime(unpack_returned_tuples=True)
            runtime.globals().obj = to_lua(runtime, sample)
            result = runtime.execute(source)
            status = result["status"] if result is not None else None
            message = result["message"] if result is not None else None
            if status != expected or not isinstance(message, str):
                failures += 1
                print(f"{kind} case {i}: got {status!r} ({message!r}), expected {expected!r}")
        print(f"{kind}: {len(cases)} cases")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
