#!/usr/bin/python3
"""Training throughput: `ctower bench` against PyTorch, as a markdown table.

What it measures
    For each model (mlp, fmnist_cnn, resnet20, cifar10_cnn), thread count T
    (1, 2) and precision (fp32, bf16) it runs, each as its own subprocess:
      ctower             build/ctower bench CONFIG --steps N --warmup W: the
                           command users run, with its input pipeline, on
                           synthetic data of the model's image shape (28x28x1,
                           32x32x3, 24x24x3), one tower on one CPU device of T
                           threads, train.precision as asked, momentum SGD
                           (lr 0.01, momentum 0.9), batch --batch
      torch best         bench/torch_step.py --threads T with
                           OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=T
                           MALLOC_MMAP_THRESHOLD_=33554432
                           MALLOC_TRIM_THRESHOLD_=4294967296
                           MALLOC_TOP_PAD_=268435456
      torch as-shipped   bench/torch_step.py --threads T (environment untouched;
                           only torch.set_num_threads(T) inside the script,
                           which does not bind OpenBLAS: at T = 1 mlp's
                           matmuls still take every core, 133% CPU on two)
      torch release      bench/torch_step.py as torch best, but under the
                           current PyTorch release from PyPI, in a virtual
                           environment of its own (--pypi-venv, default
                           build/torch-venv: made and filled with
                           `pip install torch` on first use, about 5 GB with
                           the CUDA libraries the wheel pulls in; for
                           benchmarks only, never the tests)
    "PyTorch at its best" is, in each cell and each repeat, the faster of
    torch best (Debian's) and torch release (PyPI's); the ratio ctower /
    PyTorch at its best is taken against it. --no-pypi leaves the release
    out (Debian's alone).
    PyTorch's fp32 convolutions and matmuls partly go through the system's
    BLAS: at its best that is OpenBLAS (Debian's libopenblas0), not the
    reference BLAS that python3-torch may pull in alone; the script says
    which one libblas.so.3 is.
    PyTorch's bf16 is its CPU autocast (torch.autocast("cpu", torch.bfloat16)),
    fp32 weights, as ctower's. The same work: forward, softmax cross-entropy,
    backward, momentum update, on random data (PyTorch: one fixed batch).
    Each run times --steps steps, or more where those would take less than
    --min-seconds at the machine's FMA peak (mlp's steps take about a
    millisecond: a few of them measure the machine's noise more than the
    step), the same number for ctower and PyTorch.
    The runs are interleaved -- one repeat does every cell, the three variants
    back to back, their order rotating from repeat to repeat -- and repeated
    --repeats times; the table has medians over repeats, and the ratio
    ctower/torch best is the median of the per-repeat ratios (each taken in
    one repeat, seconds apart).

    Achieved GFLOP/s = the step's FLOPs (`ctower plan`'s count for the model:
    convolutions and matmuls as direct products, 2 FLOPs per multiply-add,
    plus the elementwise work) / the median step time; its share of peak is
    against T cores of bench/fma_peak's measured per-core peak (fp32 FMA,
    or bf16 dot products for bf16 rows). Winograd convolutions do fewer
    multiplications than counted, so their share may pass 100%.

    Peak RSS is each process's peak resident memory (ru_maxrss of the child,
    whole process: PyTorch's includes its libraries, as a user sees it).

    Before each cell of each repeat, bench/core_latency measures how long a
    cache line takes between two cores and back; the header gives the
    range. A virtual machine's host may move its virtual CPUs apart while it
    runs (on a 2-core Zen 5: 75-140 ns, then 350-435 ns for minutes), and
    the runs at 2 threads then lose time on every barrier and on data the
    other core wrote: mlp's step 0.17-0.2 ms more for ctower, 0.04 for
    PyTorch in fp32 and 0.14 in bf16, so the ratio of a short step drops.
    Each progress line shows its cell's figure.

    --isa avx2 holds every run to AVX2, as on a CPU without AVX-512 (a
    Zen 3, say): ctower built for x86-64-v3 (default build-avx2/ctower:
    `cmake -S . -B build-avx2 -DCMAKE_BUILD_TYPE=Release
    -DCTOWER_MARCH=x86-64-v3`; the script checks that `ctower devices`
    reports its loops so), oneDNN's kernels (ctower's and PyTorch's) through
    DNNL_MAX_CPU_ISA / ONEDNN_MAX_CPU_ISA, PyTorch's own through
    ATEN_CPU_CAPABILITY, OpenBLAS's through OPENBLAS_CORETYPE=Haswell.
    The share of peak is then against fma_peak --isa avx2: on a Zen 4 that
    equals the AVX-512 peak (the same two 256-bit FMA pipes), on a Zen 5 it
    is half of it. bf16 rows are left out (AVX512_BF16 is AVX-512).

How to run (from anywhere; Debian's python3-torch lives under /usr/bin/python3)
    cmake --build build --target ctower fma_peak core_latency
    /usr/bin/python3 bench/bench_train.py                       # everything
    /usr/bin/python3 bench/bench_train.py --models resnet20 --threads 1 \\
        --precisions fp32 --repeats 3
    # held to AVX2: ctower built for x86-64-v3 first
    cmake -S . -B build-avx2 -DCMAKE_BUILD_TYPE=Release -DCTOWER_MARCH=x86-64-v3
    cmake --build build-avx2 --target ctower
    /usr/bin/python3 bench/bench_train.py --isa avx2 --precisions fp32

Progress goes to stderr; stdout is only markdown (a header and the table),
ready to paste into bench/RESULTS.md. The header records the machine's
per-core peak, the 1-minute load average before and after and the range
of core-to-core round trips: on a shared machine other processes on the
cores slow multi-threaded runs most, so compare only runs taken on an
otherwise idle machine, and those at 2 threads only where the round trips
are alike.
"""
import argparse
import datetime
import json
import math
import os
import re
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
TORCH_STEP = os.path.join(HERE, "torch_step.py")

TORCH_BEST_ENV = {
    "OPENBLAS_NUM_THREADS": "1",
    # OMP_NUM_THREADS is set to T per run.
    "MALLOC_MMAP_THRESHOLD_": "33554432",
    "MALLOC_TRIM_THRESHOLD_": "4294967296",
    "MALLOC_TOP_PAD_": "268435456",
}

# --isa avx2: every run's environment
AVX2_ENV = {
    "DNNL_MAX_CPU_ISA": "AVX2",
    "ONEDNN_MAX_CPU_ISA": "AVX2",
    "ATEN_CPU_CAPABILITY": "avx2",
    "OPENBLAS_CORETYPE": "Haswell",
}

# torch_best and torch_shipped: Debian's PyTorch (--python); torch_release:
# PyPI's, in its own virtual environment (--pypi-venv)
VARIANTS = ["ctower", "torch_best", "torch_shipped", "torch_release"]

# each model's image shape (height, width, channels): that of its dataset
IMAGE_SHAPES = {"mlp": (28, 28, 1), "fmnist_cnn": (28, 28, 1), "resnet20": (32, 32, 3),
                "cifar10_cnn": (24, 24, 3)}


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown CPU"


def git_commit():
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT,
                             capture_output=True, text=True, check=True)
        return out.stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def torch_version(python):
    try:
        out = subprocess.run([python, "-c", "import torch; print(torch.__version__)"],
                             capture_output=True, text=True, check=True)
        return out.stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def system_blas():
    """The library behind libblas.so.3 (Debian's alternatives), or None."""
    link = "/etc/alternatives/libblas.so.3-x86_64-linux-gnu"
    return os.path.realpath(link) if os.path.exists(link) else None


def run_measured(cmd, env):
    """Runs cmd; returns (exit status, stdout, stderr, peak RSS in MiB)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(cmd, env=env, stdout=out, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        return (proc.returncode, out.read().decode(errors="replace"),
                err.read().decode(errors="replace"), usage.ru_maxrss / 1024.0)


# The synthetic dataset's batches at most: longer runs go round it again,
# and its memory stays out of the peak RSS compared with PyTorch's (whose
# script trains on one batch).
MAX_BATCHES = 64


def ctower_config(model, threads, precision, steps, a, folder):
    """Writes the YAML `ctower bench` runs for one cell of `steps` timed
    steps; returns its path."""
    h, w, c = IMAGE_SHAPES[model]
    path = os.path.join(folder, "%s_%d_%s.yaml" % (model, threads, precision))
    with open(path, "w") as f:
        f.write("""model: {name: %s}
dataset: {name: synthetic, image_shape: [%d, %d, %d], num_classes: 10,
          train_size: %d, test_size: %d, batch_size: %d}
train:
  epochs: 1
  seed: 42
  precision: %s
  checkpoint: ""
  optimizer: {name: momentum, learning_rate: 0.01, momentum: 0.9}
devices: {n_towers: 1}
session: {device_count: {CPU: 1}, intra_op_parallelism_threads: %d}
""" % (model, h, w, c, a.batch * min(steps + a.warmup + 1, MAX_BATCHES), a.batch, a.batch,
       precision, threads))
    return path


def step_gflop(ctower, config):
    """The FLOPs of one training step, from `ctower plan` (GFLOP)."""
    proc = subprocess.run([ctower, "plan", config], capture_output=True, text=True)
    found = re.findall(r"([0-9.]+) ([kMGT]?)FLOP \(", proc.stdout + proc.stderr)
    if proc.returncode != 0 or not found:
        sys.stderr.write("bench_train: ctower plan %s failed (exit %d)\n%s%s" % (
            config, proc.returncode, proc.stdout, proc.stderr))
        sys.exit(1)
    scale = {"": 1e-9, "k": 1e-6, "M": 1e-3, "G": 1.0, "T": 1e3}
    return sum(float(x) * scale[unit] for x, unit in found)


def timed_steps(gflop, peak_gflops, threads, a):
    """--steps, or enough steps of `gflop` to last --min-seconds at the peak
    of `threads` cores."""
    return max(a.steps, int(math.ceil(a.min_seconds * peak_gflops * threads / gflop)))


def run_one(variant, model, threads, precision, steps, config, a):
    """Runs one benchmark subprocess of `steps` timed steps; returns
    images/sec, step ms and peak RSS."""
    env = dict(os.environ)
    if a.isa == "avx2":
        env.update(AVX2_ENV)
    if variant == "ctower":
        cmd = [a.ctower, "bench", config, "--steps", str(steps), "--warmup", str(a.warmup)]
    else:
        python = a.release_python if variant == "torch_release" else a.python
        cmd = [python, TORCH_STEP, "--model", model, "--batch", str(a.batch),
               "--threads", str(threads), "--steps", str(steps), "--warmup", str(a.warmup),
               "--precision", precision]
        if variant in ("torch_best", "torch_release"):
            env.update(TORCH_BEST_ENV)
            env["OMP_NUM_THREADS"] = str(threads)
    rc, out, err, rss = run_measured(cmd, env)
    if variant == "ctower":
        m = re.search(r": ([0-9.]+) images/sec, ([0-9.]+) ms/step \(median", out)
        result = m and {"images_per_sec": float(m.group(1)), "step_ms": float(m.group(2))}
    else:
        lines = [l for l in out.splitlines() if l.startswith("{")]
        j = json.loads(lines[-1]) if lines else None
        result = j and {"images_per_sec": j["images_per_sec"], "step_ms": j["step_ms_median"]}
    if rc != 0 or not result:
        sys.stderr.write("bench_train: %s failed (exit %d): %s\n%s%s" % (
            variant, rc, " ".join(cmd), out, err))
        sys.exit(1)
    result["rss_mb"] = rss
    return result


def median(values, digits=0):
    """The median of a list as text, or an en dash for an empty one."""
    return "%.*f" % (digits, statistics.median(values)) if values else "\u2013"


def fma_peak(path, isa):
    """bench/fma_peak's per-core GFLOP/s with the vectors `isa` allows:
    {"fp32": x, "bf16": y or None}."""
    proc = subprocess.run([path, "--isa", isa], capture_output=True, text=True)
    if proc.returncode != 0:
        sys.stderr.write("bench_train: %s failed: %s" % (path, proc.stderr))
        sys.exit(1)
    j = json.loads(proc.stdout)
    return {"fp32": j["fp32_gflops_per_core"], "bf16": j["bf16_gflops_per_core"]}


def core_round_trip(path):
    """bench/core_latency's round trip between two cores in ns, or None
    where the process may use one core only."""
    proc = subprocess.run([path], capture_output=True, text=True)
    if proc.returncode != 0:
        return None
    return json.loads(proc.stdout)["round_trip_ns"]


def release_python(venv):
    """The interpreter of the virtual environment `venv` with PyPI's PyTorch
    release, made and filled on first use."""
    python = os.path.join(venv, "bin", "python")
    if subprocess.run([python, "-c", "import torch"], capture_output=True).returncode == 0:
        return python
    sys.stderr.write("bench_train: installing PyPI's PyTorch release into %s (about 5 GB, "
                     "once)\n" % venv)
    if not os.path.exists(python):
        subprocess.run(["/usr/bin/python3", "-m", "venv", venv], check=True)
    subprocess.run([python, "-m", "pip", "install", "--quiet", "torch", "numpy"], check=True)
    return python


def ctower_reports(ctower, env, pattern, overrides=()):
    """The first group of `pattern` in what `ctower devices` says of its CPU
    devices in this environment (with these config overrides), or None."""
    with tempfile.NamedTemporaryFile("w", suffix=".yaml") as config:
        config.write("model: {name: mlp}\n")
        config.flush()
        proc = subprocess.run([ctower, "devices", config.name, *overrides], capture_output=True,
                              text=True, env=env)
    m = re.search(pattern, proc.stdout)
    return m.group(1) if m else None


def ctower_loops_isa(ctower, env):
    """The instruction set ctower's own loops were built for ("avx512", "avx2")."""
    return ctower_reports(ctower, env, r"isa: \S+ \(oneDNN\), (\S+) \(ctower's loops\)")


def ctower_math(ctower, env, precision):
    """What ctower's CPU devices compute in when train.precision is asked ("fp32", "bf16")."""
    return ctower_reports(ctower, env, r"  math: (\S+)", ["train.precision=" + precision])


def main():
    p = argparse.ArgumentParser(description="`ctower bench` vs PyTorch training throughput.")
    p.add_argument("--ctower", default=None,
                   help="the ctower command (default: build/ctower; with --isa avx2, "
                        "build-avx2/ctower, built for x86-64-v3)")
    p.add_argument("--fma-peak", default=os.path.join(ROOT, "build", "fma_peak"),
                   help="bench/fma_peak.c built (default: build/fma_peak)")
    p.add_argument("--core-latency", default=os.path.join(ROOT, "build", "core_latency"),
                   help="bench/core_latency.c built (default: build/core_latency)")
    p.add_argument("--python", default=sys.executable,
                   help="interpreter with Debian's torch for torch_step.py (default: this one)")
    p.add_argument("--pypi-venv", default=os.path.join(ROOT, "build", "torch-venv"),
                   help="virtual environment with PyPI's PyTorch release, made on first use "
                        "(default: build/torch-venv)")
    p.add_argument("--no-pypi", action="store_true",
                   help="leave PyPI's release out: PyTorch at its best is Debian's alone")
    p.add_argument("--models", default="mlp,fmnist_cnn,resnet20,cifar10_cnn")
    p.add_argument("--threads", default="1,2", help="comma-separated thread counts")
    p.add_argument("--precisions", default="fp32,bf16", help="fp32, bf16 or both")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--min-seconds", type=float, default=1.0,
                   help="time steps enough to last this long at the FMA peak (default 1)")
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--batch", type=int, default=128)
    p.add_argument("--isa", choices=("native", "avx2"), default="native",
                   help="avx2: hold every run to AVX2 (see above)")
    a = p.parse_args()
    if a.ctower is None:
        a.ctower = os.path.join(ROOT, "build-avx2" if a.isa == "avx2" else "build", "ctower")
    models = [m for m in a.models.split(",") if m]
    threads = [int(t) for t in a.threads.split(",") if t]
    precisions = [x for x in a.precisions.split(",") if x]
    for m in models:
        if m not in IMAGE_SHAPES:
            p.error("unknown model %r (%s)" % (m, ", ".join(IMAGE_SHAPES)))
    for x in precisions:
        if x not in ("fp32", "bf16"):
            p.error("unknown precision %r (fp32, bf16)" % x)
    if a.repeats < 1 or a.steps < 1 or a.warmup < 0 or a.batch < 1 or not threads \
            or min(threads) < 1 or a.min_seconds < 0:
        p.error("repeats, steps, batch and threads must be >= 1, warmup and min-seconds >= 0")
    for tool, what in ((a.ctower, "ctower"), (a.fma_peak, "fma_peak"),
                       (a.core_latency, "core_latency")):
        if not (os.path.isfile(tool) and os.access(tool, os.X_OK)):
            sys.stderr.write("bench_train: %s not found or not executable: %s\n"
                             "  build it with:  cmake --build build --target %s\n"
                             % (what, tool, what))
            return 2

    if subprocess.run([a.python, "-c", "import torch"], capture_output=True).returncode != 0:
        sys.stderr.write("bench_train: %s cannot import torch: install Debian's python3-torch "
                         "(apt-get install python3-torch libopenblas0) or name another "
                         "interpreter with --python\n" % a.python)
        return 2
    if a.isa == "avx2":
        loops = ctower_loops_isa(a.ctower, dict(os.environ, **AVX2_ENV))
        if loops != "avx2":
            sys.stderr.write("bench_train: --isa avx2 needs ctower built for x86-64-v3, but %s "
                             "reports its loops as %s: cmake -S . -B build-avx2 "
                             "-DCMAKE_BUILD_TYPE=Release -DCTOWER_MARCH=x86-64-v3 && cmake "
                             "--build build-avx2 --target ctower\n" % (a.ctower, loops))
            return 2
    variants = [v for v in VARIANTS if not (a.no_pypi and v == "torch_release")]
    if not a.no_pypi:
        a.release_python = release_python(a.pypi_venv)
    blas = system_blas()
    if blas is None or "openblas" not in blas:
        sys.stderr.write("bench_train: warning: libblas.so.3 is %s, not OpenBLAS: PyTorch's fp32 "
                         "runs far below its best (apt-get install libopenblas0)\n" % blas)
    peak = fma_peak(a.fma_peak, a.isa)
    if a.isa == "avx2" and "bf16" in precisions:
        sys.stderr.write("bench_train: --isa avx2: bf16 rows are left out\n")
        precisions = [x for x in precisions if x != "bf16"]
    if "bf16" in precisions and ctower_math(a.ctower, os.environ, "bf16") != "bf16":
        sys.stderr.write("bench_train: ctower's CPU devices compute bf16 in fp32 here (ctower "
                         "devices): bf16 rows are skipped\n")
        precisions = [x for x in precisions if x != "bf16"]
    load_start = os.getloadavg()[0]
    if load_start > 0.5:
        sys.stderr.write("bench_train: warning: 1-minute load average is %.2f before starting; "
                         "other processes compete for the cores\n" % load_start)
    cells = [(m, t, x) for m in models for x in precisions for t in threads]
    results = {cell: {v: [] for v in variants} for cell in cells}
    round_trips = []
    with tempfile.TemporaryDirectory() as folder:
        gflop = {m: step_gflop(a.ctower, ctower_config(m, 1, "fp32", a.steps, a, folder))
                 for m in models}
        steps = {cell: timed_steps(gflop[cell[0]], peak[cell[2]], cell[1], a) for cell in cells}
        configs = {cell: ctower_config(*cell, steps[cell], a, folder) for cell in cells}
        for r in range(a.repeats):
            order = variants[r % len(variants):] + variants[:r % len(variants)]
            for cell in cells:
                round_trip = core_round_trip(a.core_latency)
                if round_trip is not None:
                    round_trips.append(round_trip)
                for v in order:
                    res = run_one(v, *cell, steps[cell], configs[cell], a)
                    results[cell][v].append(res)
                    sys.stderr.write("repeat %d/%d  %-11s T=%d %s  %-13s %9.1f img/s  %8.2f ms  "
                                     "peak RSS %.0f MB  core round trip %s\n" % (
                                         r + 1, a.repeats, cell[0], cell[1], cell[2], v,
                                         res["images_per_sec"], res["step_ms"], res["rss_mb"],
                                         "%.0f ns" % round_trip if round_trip else "-"))

    now = datetime.datetime.now().strftime("%Y-%m-%d %H:%M")
    longer = ["%s %dT %s %d" % (m, t, x, steps[(m, t, x)]) for m, t, x in cells
              if steps[(m, t, x)] > a.steps]
    more_steps = ("%g s at the peak: " % a.min_seconds + ", ".join(longer)) if longer else \
        "each %g s or more at the peak" % a.min_seconds
    release = "" if a.no_pypi else ", PyPI's torch %s" % torch_version(a.release_python)
    print("%s, commit %s, %s (%d cores visible)%s, Debian's torch %s with %s%s; per-core peak "
          "%.1f GFLOP/s fp32, %s bf16 (bench/fma_peak --isa %s); batch %d, %d timed steps (%s) "
          "after %d warm-up, median of %d repeats; load average %.2f before, %.2f after; "
          "core-to-core round trip %s (bench/core_latency)" % (
              now, git_commit(), cpu_model(), os.cpu_count() or 0,
              " held to AVX2 (%s, ctower built for x86-64-v3)" % " ".join(
                  "%s=%s" % kv for kv in AVX2_ENV.items()) if a.isa == "avx2" else "",
              torch_version(a.python), os.path.basename(os.path.dirname(blas or "/unknown/x")),
              release, peak["fp32"],
              "%.1f GFLOP/s" % peak["bf16"] if peak["bf16"] else "no", a.isa, a.batch,
              a.steps, more_steps, a.warmup, a.repeats, load_start, os.getloadavg()[0],
              "%.0f-%.0f ns" % (min(round_trips), max(round_trips)) if round_trips
              else "not measured (one core)"))
    print()
    print("| model | threads | precision | ctower img/s | Debian's torch best img/s | Debian's "
          "torch as-shipped img/s | PyPI's torch img/s | ctower / PyTorch at its best | ctower "
          "GFLOP/s (share of peak) | PyTorch at its best GFLOP/s (share) | ctower peak RSS MB | "
          "PyTorch at its best peak RSS MB | RSS ctower / PyTorch at its best |")
    print("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for cell in cells:
        model, t, precision = cell
        got = results[cell]

        def col(v, key, runs=None):
            return [x[key] for x in (got[v] if runs is None else runs)]

        # PyTorch at its best: in each repeat, the faster of Debian's and PyPI's
        best = [max(pair, key=lambda x: x["images_per_sec"])
                for pair in zip(got["torch_best"], got.get("torch_release", got["torch_best"]))]
        ratios = [c["images_per_sec"] / b["images_per_sec"] for c, b in zip(got["ctower"], best)]
        rss_ratios = [c["rss_mb"] / b["rss_mb"] for c, b in zip(got["ctower"], best)]
        machine_peak = peak[precision] * t

        def rate(runs):
            r = gflop[model] / (statistics.median(col(None, "step_ms", runs)) * 1e-3)
            return "%.0f (%.0f%%)" % (r, 100 * r / machine_peak)

        print("| %s | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            model, t, precision, median(col("ctower", "images_per_sec")),
            median(col("torch_best", "images_per_sec")),
            median(col("torch_shipped", "images_per_sec")),
            median(col("torch_release", "images_per_sec")) if "torch_release" in got else "\u2013",
            median(ratios, 2), rate(got["ctower"]), rate(best), median(col("ctower", "rss_mb")),
            median(col(None, "rss_mb", best)), median(rss_ratios, 2)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
