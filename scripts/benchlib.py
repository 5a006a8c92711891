"""What the benchmark scripts share: the repository root, the evaluation
data and a private venv with pinned baselines."""
import os
import pathlib
import subprocess
import sys
import time
import venv

ROOT = pathlib.Path(__file__).resolve().parent.parent


def eval_dir():
    """`$TRELLIS_EVAL_DIR`, else `../shared/eval` beside the checkout."""
    if "TRELLIS_EVAL_DIR" in os.environ:
        return pathlib.Path(os.environ["TRELLIS_EVAL_DIR"])
    for candidate in [ROOT.parent / "shared" / "eval", ROOT.parent.parent / "shared" / "eval"]:
        if (candidate / "README.md").is_file():
            return candidate
    sys.exit("evaluation data not found; set TRELLIS_EVAL_DIR")


def ensure_venv(env_dir, pinned, script):
    """Re-executes `script` inside the venv at `env_dir`, creating it with
    the `pinned` packages first."""
    env_dir = pathlib.Path(env_dir)
    python = env_dir / "bin" / "python"
    if pathlib.Path(sys.prefix).resolve() == env_dir.resolve():
        return
    if not python.exists():
        print(f"creating {env_dir} with {', '.join(pinned)}", file=sys.stderr)
        venv.create(env_dir, with_pip=True)
        subprocess.run([str(python), "-m", "pip", "install", "--quiet", *pinned], check=True)
    os.execv(str(python), [str(python), script, *sys.argv[1:]])


def fastest(work, min_seconds, min_passes):
    """Runs work() at least `min_passes` times and for at least
    `min_seconds`; returns (the fastest pass in seconds, work()'s last
    result)."""
    best, passes, started, result = float("inf"), 0, time.perf_counter(), None
    while passes < min_passes or time.perf_counter() - started < min_seconds:
        t = time.perf_counter()
        result = work()
        best = min(best, time.perf_counter() - t)
        passes += 1
    return best, result
