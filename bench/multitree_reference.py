"""Reference all-reduce cycle counts from the MultiTree authors' simulator (ISCA 2021).

Peer: github.com/farabimahmud/accelerator @ b241ca1d339c1ef13e18e9b610d0951437f93e86
(a public fork of HPCL/accelerator), built as described in bench/data/multitree_reference.md.

    .venv/bin/python bench/multitree_reference.py run --peer /path/to/accelerator \\
        [--topos torus4x4 ...] [--variants ring ...] [--sizes-kib 32 ...] [--jobs N] \\
        [--outroot DIR] [--dry-run]
    .venv/bin/python bench/multitree_reference.py collect --outroot DIR \\
        [--out bench/data/multitree_reference.csv]

`run` runs the peer's src/simulate.py once per (topology, variant, size), with the flags of
the authors' utils/run_{torus,mesh}_bandwidth.sh, into one directory per run,
<outroot>/<topo>_<variant>_<KiB>KiB/:
    cmd.txt    the simulator flags (argv after src/simulate.py), written before the run
    stdout.txt BookSim and Python output
    wall.txt   "wall_s X", "cpu_s Y", "rc N" of the run
    run.log    the simulator's log (copied from r_<alg>[_<variant>].log)
    run.json   the simulator's JSON result; written last, it marks the run as done
It is resumable: directories with run.json are skipped, failed ones are run again, partial
ones are removed first (unless modified in the last 10 minutes: then it is reported as busy
and left alone). Every skip, retry and failure is printed. The environment is pinned
(PYTHONHASHSEED=0, and ASLR off through `setarch -R` if available) so that re-running a
byte-identical command reproduces its result. The argv includes the absolute peer and run
paths, so reproducing an old number exactly needs the same --peer and --outroot paths
(MultiTree beta/delta results move with such incidental changes; see the .md).
This is the tidied form of the driver that made the stored runs; the argv is the same.

`collect` reads every finished run directory (run.json, or wall.txt without run.json = a
failed run; directories still running are listed and left out) and writes one CSV row per
run. It needs neither the peer nor its venv.
"""

from __future__ import annotations

import argparse
import csv
import glob
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEFAULT_CSV = REPO / "bench" / "data" / "multitree_reference.csv"

TOPOS = {
    # name: (num_hmcs, --booksim-network, 1-NI config, 4-NI config)  in src/booksim2/runfiles
    "torus4x4": (16, "torus", "torus4x4express.cfg", "ctorus4x4multitree.cfg"),
    "mesh4x4": (16, "mesh", "mesh4x4express.cfg", "cmesh4x4multitree.cfg"),
    "torus8x8": (64, "torus", "torus8x8express.cfg", "ctorus8x8multitree.cfg"),
}

LOCK = "--strict-schedule --prioritize-schedule --estimate-lockstep"
VARIANTS = {
    # name: (--allreduce, uses the 4-NI config, options)  as in utils/run_*_bandwidth.sh
    "ring": ("ring", False, "--kary 2 --radix 1 --message-size 256"),
    "dtree": ("dtree", False, "--kary 2 --radix 1 --message-size 256"),
    "ring2d": ("ring2d", True, "--kary 5 --radix 4 --message-size 256"),
    "alpha": ("multitree", False, "--kary 2 --radix 1 --message-size 256 " + LOCK),
    "beta": ("multitree", True, "--kary 5 --radix 4 --message-size 256 " + LOCK),
    "delta": ("multitree", True, "--kary 5 --radix 4 --message-size 0 " + LOCK),
    # Not in the authors' scripts and not in the default list: alpha without
    # --estimate-lockstep. alpha aborts on the 4x4 mesh (AssertionError, hmc.py:494);
    # this is the closest variant that runs there.
    "alpha_nolock": ("multitree", False,
                     "--kary 2 --radix 1 --message-size 256 --strict-schedule --prioritize-schedule"),
    # beta and delta without the idle-step timer: they measure how much of the authors'
    # beta/delta on the 8x8 torus is that timer (its wait grows with the chunk size).
    "beta_nolock": ("multitree", True,
                    "--kary 5 --radix 4 --message-size 256 --strict-schedule --prioritize-schedule"),
    "delta_nolock": ("multitree", True,
                     "--kary 5 --radix 4 --message-size 0 --strict-schedule --prioritize-schedule"),
}
DEFAULT_VARIANTS = ["ring", "dtree", "ring2d", "alpha", "beta", "delta"]
SIZES_KIB = [32 * 2 ** i for i in range(9)]  # 32 KiB .. 8 MiB

COLUMNS = ["topology", "variant", "size_bytes", "fp32_elements", "total_cycles",
           "computation_cycles", "status", "cpu_seconds", "flags"]
BUSY_SECONDS = 600
RUNDIR_RE = re.compile(r"^(?P<topo>{})_(?P<variant>.+)_(?P<kib>\d+)KiB$".format(
    "|".join(map(re.escape, TOPOS))))


def rundir_name(topo: str, variant: str, kib: int) -> str:
    return f"{topo}_{variant}_{kib}KiB"


def sim_flags(peer: str, rundir: str, topo: str, variant: str, kib: int,
              cfg_path: str | None = None) -> list[str]:
    """argv after src/simulate.py, in the driver's order."""
    nodes, net, cfg1, cfg4 = TOPOS[topo]
    alg, four, opts = VARIANTS[variant]
    if cfg_path is None:
        cfg_path = os.path.join(peer, "src/booksim2/runfiles", cfg4 if four else cfg1)
    elems = kib * 1024 // 4  # --synthetic-data-size counts fp32 elements
    return (["--num-hmcs", str(nodes), "--run-name", "r",
             "--booksim-config", cfg_path, "--allreduce", alg,
             "--outdir", rundir, "--booksim-network", net,
             "--message-buffer-size", "32", "--sub-message-size", "256",
             "--only-allreduce", "--synthetic-data-size", str(elems)] + opts.split())


# ----------------------------------------------------------------------------- run

_print_lock = threading.Lock()


def say(*a) -> None:
    with _print_lock:
        print(*a, flush=True)


def run_one(peer: str, python: str, outroot: str, topo: str, variant: str, kib: int,
            dry: bool) -> str:
    rundir = os.path.join(outroot, rundir_name(topo, variant, kib))
    tag = rundir_name(topo, variant, kib)
    if os.path.exists(os.path.join(rundir, "run.json")):
        say(f"skip  {tag}: done (run.json exists)")
        return "skip"
    flags = sim_flags(peer, rundir, topo, variant, kib)
    cmd = [python, os.path.join(peer, "src/simulate.py")] + flags
    if shutil.which("setarch"):
        cmd = ["setarch", os.uname().machine, "-R"] + cmd
    if dry:
        say(shlex.join(cmd))
        return "dry"
    if os.path.exists(rundir):
        if os.path.exists(os.path.join(rundir, "wall.txt")):
            say(f"retry {tag}: previous run failed, removing it")
        else:
            newest = max([os.path.getmtime(p) for p in glob.glob(os.path.join(rundir, "*"))]
                         + [os.path.getmtime(rundir)])
            age = time.time() - newest
            if age < BUSY_SECONDS:
                say(f"busy  {tag}: partial run modified {age:.0f} s ago, maybe still running;"
                    " left alone (remove it by hand to rerun)")
                return "busy"
            say(f"clean {tag}: removing a stale partial run")
        shutil.rmtree(rundir)
    os.makedirs(rundir)
    with open(os.path.join(rundir, "cmd.txt"), "w") as f:
        f.write(shlex.join(flags) + "\n")
    # Same-cycle events are ordered by iterating Python sets of str (PYTHONHASHSEED)
    # and of SimObjects (hash = id(), i.e. memory address -> ASLR). Pinning both
    # makes a re-run of the identical command reproduce its result.
    env = dict(os.environ, SIMHOME=peer, PYTHONHASHSEED="0",
               BOOKSIMSRC=os.path.join(peer, "src/booksim2/src"))
    t0 = time.time()
    with open(os.path.join(rundir, "stdout.txt"), "w") as out:
        p = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, cwd=peer, env=env)
        _, wstatus, ru = os.wait4(p.pid, 0)
        p.returncode = rc = os.waitstatus_to_exitcode(wstatus)
    wall = time.time() - t0
    cpu = ru.ru_utime + ru.ru_stime
    with open(os.path.join(rundir, "wall.txt"), "w") as f:
        f.write(f"wall_s {wall:.1f}\ncpu_s {cpu:.1f}\nrc {rc}\n")
    jsons = glob.glob(os.path.join(rundir, "r_*.json"))
    logs = glob.glob(os.path.join(rundir, "r_*.log"))
    elems = kib * 1024 // 4
    cycles = ""
    if rc == 0 and len(jsons) == 1:
        with open(jsons[0]) as f:
            cycles = json.load(f)["results"]["performance"]["total"]
        if logs:
            shutil.copy(logs[0], os.path.join(rundir, "run.log"))
        shutil.copy(jsons[0], os.path.join(rundir, "run.json"))  # marks the run as done
        status = "ok"
    else:
        status = f"fail(rc={rc})"
    line = "\t".join(str(x) for x in (topo, variant, kib, elems, status, cycles,
                                      f"{wall:.1f}", f"{cpu:.1f}"))
    with _print_lock:
        with open(os.path.join(outroot, "summary.tsv"), "a") as f:
            f.write(line + "\n")
    say(("done  " if status == "ok" else "FAIL  ") + line)
    return status


def cmd_run(a) -> int:
    peer = os.path.abspath(a.peer)
    if not os.path.isfile(os.path.join(peer, "src", "simulate.py")):
        print(f"error: --peer {a.peer}: no src/simulate.py there; expected a checkout of "
              "github.com/farabimahmud/accelerator (see bench/data/multitree_reference.md)",
              file=sys.stderr)
        return 2
    python = os.path.abspath(a.python) if a.python else os.path.join(peer, ".venv/bin/python")
    if not a.dry_run and not os.access(python, os.X_OK):
        print(f"error: no Python interpreter at {python} (make the peer's venv or pass --python)",
              file=sys.stderr)
        return 2
    if not a.dry_run and not glob.glob(os.path.join(peer, "src/booksim2/src/pybooksim*.so")):
        print(f"error: {peer}/src/booksim2/src has no pybooksim*.so; build it with `make lib` there",
              file=sys.stderr)
        return 2
    outroot = os.path.abspath(a.outroot or os.path.join(os.path.dirname(peer), "multitree_runs"))
    os.makedirs(outroot, exist_ok=True)
    # small sizes first, so that partial progress covers the whole matrix
    todo = [(t, v, s) for s in sorted(a.sizes_kib) for t in a.topos for v in a.variants]
    say(f"{len(todo)} runs, outroot {outroot}, {a.jobs} job(s)")
    with ThreadPoolExecutor(max_workers=a.jobs) as ex:
        res = list(ex.map(lambda x: run_one(peer, python, outroot, *x, a.dry_run), todo))
    counts = {s: res.count(s) for s in sorted(set(res))}
    say("summary: " + ", ".join(f"{k} {v}" for k, v in counts.items()))
    return 1 if any(s.startswith("fail") or s == "busy" for s in res) else 0


# ----------------------------------------------------------------------------- collect

def read_wall(rundir: str) -> dict:
    """wall.txt: 'wall_s X / cpu_s Y / rc N' lines, or (early calibration runs) one number = wall."""
    path = os.path.join(rundir, "wall.txt")
    out: dict = {}
    if not os.path.exists(path):
        return out
    for line in open(path).read().split("\n"):
        parts = line.split()
        if len(parts) == 2:
            out[parts[0]] = parts[1]
        elif len(parts) == 1:
            out["wall_s"] = parts[0]
    return out


def failure_reason(rundir: str, wall: dict) -> str:
    """The last Python exception name in stdout.txt, else the return code."""
    reason = ""
    try:
        text = open(os.path.join(rundir, "stdout.txt"), errors="replace").read()
    except OSError:
        text = ""
    for m in re.finditer(r"^(\w+(?:Error|Exception))\b", text, re.M):
        reason = m.group(1)
    if not reason and "rc" in wall:
        reason = f"rc={wall['rc']}"
    return "fail:" + reason if reason else "fail"


def stdout_cfg(rundir: str) -> str | None:
    try:
        with open(os.path.join(rundir, "stdout.txt"), errors="replace") as f:
            for line in f:
                if line.startswith("Begin BookSim Configuration File: "):
                    return line.split(": ", 1)[1].strip()
    except OSError:
        pass
    return None


def check_flags(flags: list[str], conf: dict) -> list[str]:
    """Differences between the flags and the configuration the simulator recorded."""
    args: dict = {}
    i = 0
    while i < len(flags):
        key = flags[i][2:].replace("-", "_")
        if i + 1 < len(flags) and not flags[i + 1].startswith("--"):
            args[key] = flags[i + 1]
            i += 2
        else:
            args[key] = True
            i += 1
    args["logdir"] = args.pop("outdir")
    bad = []
    for k, v in args.items():
        got = conf.get(k)
        if v is True:
            ok = got is True
        else:
            ok = str(got) == v
        if not ok:
            bad.append(f"{k}: flags {v!r} vs json {got!r}")
    for k in ("strict_schedule", "prioritize_schedule", "estimate_lockstep", "oracle_lockstep"):
        if conf.get(k) and k not in args:
            bad.append(f"{k}: set in json, not in flags")
    return bad


def collect_one(rundir: str, topo: str, variant: str, kib: int) -> tuple[dict, list[str]]:
    wall = read_wall(rundir)
    row = {"topology": topo, "variant": variant, "size_bytes": kib * 1024,
           "fp32_elements": kib * 1024 // 4, "total_cycles": "", "computation_cycles": "",
           "status": "", "cpu_seconds": wall.get("cpu_s", ""), "flags": ""}
    problems: list[str] = []
    conf = None
    if os.path.exists(os.path.join(rundir, "run.json")):
        with open(os.path.join(rundir, "run.json")) as f:
            d = json.load(f)
        perf = d["results"]["performance"]
        row["total_cycles"] = perf["total"]
        comp = (perf.get("allreduce") or {}).get("computation",
                                                   (d["results"].get("allreduce") or {}).get("computation"))
        row["computation_cycles"] = "" if comp is None else comp
        row["status"] = "ok"
        conf = d.get("configuration", {})
    else:
        row["status"] = failure_reason(rundir, wall)
    cmd_txt = os.path.join(rundir, "cmd.txt")
    if os.path.exists(cmd_txt):
        flags = shlex.split(open(cmd_txt).read())
    else:  # runs made by the earlier driver: rebuild its argv from the recorded paths
        outdir = conf["logdir"] if conf else os.path.abspath(rundir)
        cfg = conf["booksim_config"] if conf else stdout_cfg(rundir)
        if cfg is None:
            problems.append("booksim config path unknown; flags use <peer>")
        flags = sim_flags("<peer>", outdir, topo, variant, kib, cfg)
    if conf is not None:
        problems += check_flags(flags, conf)
    row["flags"] = shlex.join(flags)
    return row, problems


def cmd_collect(a) -> int:
    outroot = a.outroot
    if not os.path.isdir(outroot):
        print(f"error: --outroot {outroot} is not a directory", file=sys.stderr)
        return 2
    rows, unfinished, unknown, bad = [], [], [], 0
    for name in sorted(os.listdir(outroot)):
        rundir = os.path.join(outroot, name)
        if not os.path.isdir(rundir):
            continue
        m = RUNDIR_RE.match(name)
        if not m or m["variant"] not in VARIANTS:
            unknown.append(name)
            continue
        done = os.path.exists(os.path.join(rundir, "run.json"))
        if not done and (not os.path.exists(os.path.join(rundir, "wall.txt"))
                         or glob.glob(os.path.join(rundir, "r_*.json"))):
            unfinished.append(name)
            continue
        row, problems = collect_one(rundir, m["topo"], m["variant"], int(m["kib"]))
        for p in problems:
            print(f"warning: {name}: {p}", file=sys.stderr)
        bad += bool(problems)
        rows.append(row)
    topo_order = {t: i for i, t in enumerate(TOPOS)}
    var_order = {v: i for i, v in enumerate(VARIANTS)}
    rows.sort(key=lambda r: (topo_order[r["topology"]], var_order[r["variant"]], r["size_bytes"]))
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS, lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
    print(f"wrote {len(rows)} rows to {out}")
    if unfinished:
        print(f"left out {len(unfinished)} unfinished run dir(s): {', '.join(unfinished)}")
    if unknown:
        print(f"ignored {len(unknown)} dir(s) not named <topo>_<variant>_<KiB>KiB: {', '.join(unknown)}")
    # summary per topology / variant
    print(f"\n{'topology':<10}{'variant':<14}{'ok':>4}{'fail':>6}  sizes KiB (ok)")
    for t in TOPOS:
        for v in VARIANTS:
            sel = [r for r in rows if r["topology"] == t and r["variant"] == v]
            if not sel:
                continue
            ok = [r["size_bytes"] // 1024 for r in sel if r["status"] == "ok"]
            print(f"{t:<10}{v:<14}{len(ok):>4}{len(sel) - len(ok):>6}  {' '.join(map(str, ok))}")
    if bad:
        print(f"\n{bad} run(s) whose flags disagree with their run.json (see warnings)", file=sys.stderr)
        return 1
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="run the peer simulator over the matrix (resumable)")
    r.add_argument("--peer", required=True, help="checkout of farabimahmud/accelerator, built")
    r.add_argument("--python", help="interpreter for the peer (default <peer>/.venv/bin/python)")
    r.add_argument("--outroot", help="run directories (default: multitree_runs next to --peer)")
    r.add_argument("--topos", nargs="+", default=list(TOPOS), choices=list(TOPOS))
    r.add_argument("--variants", nargs="+", default=DEFAULT_VARIANTS, choices=list(VARIANTS))
    r.add_argument("--sizes-kib", nargs="+", type=int, default=SIZES_KIB)
    r.add_argument("--jobs", type=int, default=1)
    r.add_argument("--dry-run", action="store_true", help="print the commands only")
    c = sub.add_parser("collect", help="write the CSV from the finished run directories")
    c.add_argument("--outroot", required=True)
    c.add_argument("--out", default=str(DEFAULT_CSV))
    a = ap.parse_args(argv)
    if a.cmd == "run":
        if a.jobs < 1 or any(s <= 0 or s * 1024 % 4 for s in a.sizes_kib):
            ap.error("--jobs must be >= 1 and sizes positive")
        return cmd_run(a)
    return cmd_collect(a)


if __name__ == "__main__":
    sys.exit(main())
