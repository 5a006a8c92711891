"""What the benchmark scripts share: the repository root, the evaluation
data and a private venv with pinned baselines."""
import os
import pathlib
import subprocess
import sys
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
