#!/usr/bin/env python3
"""gpumem's probe campaign: every job of jobs.json through the synthetic probe.

    python3 probe/campaign/campaign.py --budget 420 --out OUT

runs each job of jobs.json (written by `go test ./probe/campaign -update`, the
estimates computed then by gpumem) as a fresh `python3 probe/script/probe.py`
process, cheapest first, and appends one JSON line per job to OUT/results.jsonl
(schema gpumem-probe-campaign/1): the job, gpumem's estimate of it, the probe's
gpumem-probe/1 result, the GPU's name and the memory CUDA sees, the driver
(NVML), the package versions, and what became of the job:

    ok        measured
    oom       ran out of GPU memory (the peaks up to the failure are kept)
    skipped   not run: a package it needs is missing (bitsandbytes, flash-attn),
              or gpumem's estimate exceeds the GPU's memory
    failed    the probe reported an error (its kind and message in "reason")
    crashed   the probe printed no result line (exit code, end of stderr)
    timeout   killed after --job-timeout
    not_run   the time budget ran out before the job could start, or it was
              killed when the budget ended

No job starts with less than --min-start seconds of the budget left. A second
run with the same OUT (or with --resume FILE) keeps the jobs that ended ok, oom
or skipped and runs the others. Everything here is the Python standard
library; the probe itself needs torch and transformers (peft for LoRA).
`gpumem probe --from-campaign OUT/results.jsonl` compares and keeps the results.
"""
import argparse
import hashlib
import json
import os
import signal
import subprocess
import sys
import time

SCHEMA = "gpumem-probe-campaign/1"
JOBS_SCHEMA = "gpumem-probe-campaign-jobs/1"
KEPT = ("ok", "oom", "skipped")  # what a resumed campaign does not run again
GIB = float(1 << 30)
TAIL = 4000  # characters of a failed job's stderr kept in its line

# Modules the jobs may need, and the distributions that give their versions.
MODULES = ("torch", "transformers", "peft", "accelerate", "bitsandbytes", "flash_attn", "pynvml")
DISTS = {"torch": "torch", "transformers": "transformers", "peft": "peft", "accelerate": "accelerate",
         "bitsandbytes": "bitsandbytes", "flash_attn": "flash-attn", "nvidia_ml_py": "nvidia-ml-py"}

# Run in the jobs' interpreter: which modules it has, their versions, and
# the GPUs NVML sees. It imports none of the ML packages, and NVML creates no
# CUDA context, so no memory of the GPU is taken before the jobs run.
ENV_PROBE = r"""
import importlib.util, json, platform, sys
from importlib import metadata
mods, dists = json.loads(sys.argv[1]), json.loads(sys.argv[2])
out = {"python": platform.python_version(), "modules": {}, "versions": {}, "gpus": []}
for m in mods:
    try:
        out["modules"][m] = importlib.util.find_spec(m) is not None
    except (ImportError, ValueError):
        out["modules"][m] = False
for key, dist in dists.items():
    try:
        out["versions"][key] = metadata.version(dist)
    except Exception:
        pass
try:
    import pynvml
    pynvml.nvmlInit()
    v = pynvml.nvmlSystemGetDriverVersion()
    out["driver"] = v.decode() if isinstance(v, bytes) else str(v)
    for i in range(pynvml.nvmlDeviceGetCount()):
        h = pynvml.nvmlDeviceGetHandleByIndex(i)
        name = pynvml.nvmlDeviceGetName(h)
        out["gpus"].append({"index": i, "name": name.decode() if isinstance(name, bytes) else str(name),
                            "nvml_total_bytes": int(pynvml.nvmlDeviceGetMemoryInfo(h).total)})
    pynvml.nvmlShutdown()
    out["gpu_source"] = "nvml"
except Exception as e:
    out["nvml_error"] = "%s: %s" % (type(e).__name__, e)
print(json.dumps(out))
"""


def log(msg):
    print("campaign: " + msg, file=sys.stderr, flush=True)


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        h.update(f.read())
    return h.hexdigest()


def now_utc():
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def load_jobs(path):
    with open(path) as f:
        plan = json.load(f)
    if plan.get("schema") != JOBS_SCHEMA:
        raise SystemExit("campaign: %s: schema %r, want %r (regenerate it: go test ./probe/campaign -update)"
                         % (path, plan.get("schema"), JOBS_SCHEMA))
    seen = set()
    for i, job in enumerate(plan.get("jobs") or []):
        for key in ("id", "model", "config", "job", "requires", "estimate"):
            if key not in job:
                raise SystemExit("campaign: %s: jobs[%d] has no %r" % (path, i, key))
        if job["id"] in seen:
            raise SystemExit("campaign: %s: job id %r twice" % (path, job["id"]))
        seen.add(job["id"])
    if not seen:
        raise SystemExit("campaign: %s: no jobs" % path)
    return plan


def environment(python):
    """What the jobs' interpreter has; GPUs from NVML, else nvidia-smi."""
    try:
        out = subprocess.run([python, "-c", ENV_PROBE, json.dumps(MODULES), json.dumps(DISTS)],
                             capture_output=True, text=True, timeout=300)
        env = json.loads(out.stdout.strip().splitlines()[-1])
    except (OSError, subprocess.SubprocessError, ValueError, IndexError) as e:
        raise SystemExit("campaign: cannot run %s to see what it has installed: %s" % (python, e))
    if not env["gpus"]:
        env.update(smi_gpus())
    return env


def smi_gpus():
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=index,name,memory.total,driver_version",
                              "--format=csv,noheader,nounits"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return {}
    gpus, driver = [], ""
    for line in out.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) == 4 and parts[0].isdigit() and parts[2].isdigit():
            gpus.append({"index": int(parts[0]), "name": parts[1], "nvml_total_bytes": int(parts[2]) << 20})
            driver = parts[3]
    return {"gpus": gpus, "driver": driver, "gpu_source": "nvidia-smi"} if gpus else {}


def read_results(path):
    """The lines of an earlier results file, the last one per job id."""
    lines = {}
    with open(path) as f:
        for n, raw in enumerate(f, 1):
            raw = raw.strip()
            if not raw:
                continue
            try:
                rec = json.loads(raw)
            except ValueError as e:
                raise SystemExit("campaign: %s line %d: %s" % (path, n, e))
            if rec.get("schema") != SCHEMA or not rec.get("id"):
                raise SystemExit("campaign: %s line %d: not a %s line" % (path, n, SCHEMA))
            lines[rec["id"]] = rec
    return lines


def result_line(stdout):
    """The probe's result: the last stdout line that is a JSON object with a schema."""
    for raw in reversed(stdout.splitlines()):
        raw = raw.strip()
        if raw.startswith("{") and '"schema"' in raw:
            try:
                return json.loads(raw)
            except ValueError:
                return None
    return None


def fmt_gib(b):
    return "%.2f GiB" % (b / GIB)


class Campaign:
    def __init__(self, args, plan, env):
        self.args, self.plan, self.env = args, plan, env
        self.here = os.path.dirname(os.path.abspath(args.jobs))
        self.start = time.monotonic()
        self.deadline = self.start + args.budget
        gpu = (env.get("gpus") or [{}])[0]
        self.gpu = {"name": gpu.get("name", ""), "nvml_total_bytes": gpu.get("nvml_total_bytes", 0),
                    "driver": env.get("driver", "")}
        self.software = dict(env.get("versions", {}), python=env.get("python", ""))
        self.header = {"jobs_sha256": sha256_file(args.jobs), "probe_sha256": sha256_file(args.probe),
                       "runner_sha256": sha256_file(os.path.abspath(__file__)), "started_at": now_utc(),
                       "budget_s": args.budget, "warmup": plan.get("warmup", 1), "steps": plan.get("steps", 2)}

    def left(self):
        return self.deadline - time.monotonic()

    def base(self, job):
        rec = {"schema": SCHEMA, "campaign": self.header}
        for key in ("id", "model", "model_id", "groups", "what", "job", "cache_implementation", "note",
                    "estimate", "config_sha256", "requires"):
            if key in job:
                rec[key] = job[key]
        rec.update(gpu=dict(self.gpu), software=dict(self.software), started_at=now_utc(),
                   wall_s=0.0, exit_code=None, result=None)
        return rec

    def decide(self, job):
        """Why the job is not started, as (status, reason), or None."""
        missing = [m for m in job["requires"] if not self.env["modules"].get(m)]
        if missing:
            return "skipped", "needs %s, which %s cannot import" % (", ".join(missing), self.args.python)
        est = job["estimate"].get("device_peak_bytes", 0)
        total = self.gpu["nvml_total_bytes"]
        if total and est > total:
            return "skipped", "gpumem's estimate of its device peak (%s on %s) exceeds this GPU's %s" % (
                fmt_gib(est), job["estimate"].get("gpu", "?"), fmt_gib(total))
        if self.left() < self.args.min_start:
            return "not_run", "the time budget ran out (%.0f s left of %d s; a job starts with at least %d s)" % (
                max(self.left(), 0), self.args.budget, self.args.min_start)
        return None

    def run(self, job):
        rec = self.base(job)
        why = self.decide(job)
        if why:
            rec["status"], rec["reason"] = why
            return rec
        jobdir = os.path.join(self.args.out, "jobs", job["id"])
        os.makedirs(jobdir, exist_ok=True)
        with open(os.path.join(self.here, job["config"]), "rb") as f:
            cfg = f.read()
        with open(os.path.join(jobdir, "config.json"), "wb") as f:
            f.write(cfg)
        with open(os.path.join(jobdir, "job.json"), "w") as f:
            json.dump(job["job"], f, indent=1)
        cmd = [self.args.python, "-u", self.args.probe, "--config", os.path.join(jobdir, "config.json"),
               "--job", os.path.join(jobdir, "job.json"), "--warmup", str(rec["campaign"]["warmup"]),
               "--steps", str(rec["campaign"]["steps"]), "--device", "0"]
        if job.get("cache_implementation"):
            cmd += ["--cache-implementation", job["cache_implementation"]]
        limit = min(self.args.job_timeout, self.left())
        by_budget = limit < self.args.job_timeout
        logpath = os.path.join(self.args.out, "logs", job["id"] + ".log")
        t0 = time.monotonic()
        with open(logpath, "w") as errf:
            proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=errf, text=True, start_new_session=True)
            try:
                stdout, _ = proc.communicate(timeout=limit)
                killed = False
            except subprocess.TimeoutExpired:
                stop(proc)
                stdout, _ = proc.communicate()
                killed = True
        rec["wall_s"] = round(time.monotonic() - t0, 1)
        rec["exit_code"] = proc.returncode
        res = result_line(stdout or "")
        rec["result"] = res
        dev = (res or {}).get("device") or {}
        for key in ("name", "cuda_free_bytes", "cuda_total_bytes", "capability"):
            if dev.get(key):
                rec["gpu"][key] = dev[key]
        sw = (res or {}).get("software") or {}
        for key in ("torch", "cuda", "transformers", "peft", "accelerate", "driver"):
            if sw.get(key):
                (rec["gpu"] if key == "driver" else rec["software"])[key] = sw[key]
        if killed:
            rec["status"] = "not_run" if by_budget else "timeout"
            rec["reason"] = ("killed when the time budget ran out after %.0f s" % rec["wall_s"] if by_budget
                             else "killed after --job-timeout %d s" % self.args.job_timeout)
        elif res is None:
            rec["status"], rec["reason"] = "crashed", "exit code %s and no result line" % proc.returncode
        elif res.get("ok"):
            rec["status"] = "ok"
        elif res.get("error_kind") == "oom":
            rec["status"], rec["reason"] = "oom", res.get("error", "")
        elif res.get("error_kind") == "missing_module":
            rec["status"], rec["reason"] = "skipped", "needs %s: %s" % (res.get("module"), res.get("error", ""))
        else:
            rec["status"], rec["reason"] = "failed", "%s: %s" % (res.get("error_kind"), res.get("error", ""))
        if rec["status"] not in ("ok", "oom", "skipped"):
            rec["stderr_tail"] = tail(logpath)
        return rec


def stop(proc):
    """SIGTERM to the job's process group, SIGKILL ten seconds later."""
    for sig, wait in ((signal.SIGTERM, 10), (signal.SIGKILL, 30)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


def tail(path):
    try:
        with open(path, errors="replace") as f:
            return f.read()[-TAIL:]
    except OSError:
        return ""


def describe(rec):
    s = "%s: %s" % (rec["id"], rec["status"])
    if rec.get("wall_s"):
        s += " in %.1f s" % rec["wall_s"]
    res, est = rec.get("result") or {}, rec.get("estimate") or {}
    parts = []
    for key in ("allocated_peak_bytes", "reserved_peak_bytes", "device_peak_bytes"):
        m, e = res.get(key) or 0, est.get(key) or 0
        if m > 0:
            part = "%s %s" % (key.split("_")[0], fmt_gib(m))
            if e > 0:
                part += " (estimate %s, %+.1f %%)" % (fmt_gib(e), 100.0 * (e - m) / m)
            parts.append(part)
    if parts:
        s += ": " + "; ".join(parts)
    if rec.get("reason"):
        s += " — " + rec["reason"]
    return s


def parse_args(argv):
    here = os.path.dirname(os.path.abspath(__file__))
    p = argparse.ArgumentParser(description="run gpumem's probe campaign (see the module docstring)")
    p.add_argument("--budget", type=int, default=420, help="seconds for the whole campaign (default 420)")
    p.add_argument("--out", default=os.path.join(here, "results"), help="folder for results.jsonl, logs and job files")
    p.add_argument("--jobs", default=os.path.join(here, "jobs.json"), help="the job list (default: jobs.json here)")
    p.add_argument("--probe", default=os.path.join(here, "..", "script", "probe.py"), help="the probe script")
    p.add_argument("--python", default=sys.executable, help="interpreter of the jobs (default: this one)")
    p.add_argument("--job-timeout", type=int, default=300, help="seconds one job may run (default 300)")
    p.add_argument("--min-start", type=int, default=20, help="start no job with fewer seconds left (default 20)")
    p.add_argument("--resume", help="an earlier results.jsonl: keep its ok, oom and skipped jobs")
    p.add_argument("--fresh", action="store_true", help="ignore OUT/results.jsonl and run every job")
    p.add_argument("--only", help="comma-separated job ids to run")
    p.add_argument("--list", action="store_true", help="list the jobs and exit")
    args = p.parse_args(argv)
    if args.budget <= 0 or args.job_timeout <= 0 or args.min_start < 0:
        p.error("--budget and --job-timeout must be positive, --min-start not negative")
    args.jobs, args.probe, args.out = os.path.abspath(args.jobs), os.path.abspath(args.probe), os.path.abspath(args.out)
    return args


def main(argv=None):
    args = parse_args(argv)
    plan = load_jobs(args.jobs)
    jobs = plan["jobs"]
    if args.only:
        want = [s.strip() for s in args.only.split(",") if s.strip()]
        unknown = [w for w in want if w not in {j["id"] for j in jobs}]
        if unknown:
            raise SystemExit("campaign: --only: no job %s in %s" % (", ".join(unknown), args.jobs))
        jobs = [j for j in jobs if j["id"] in want]
    if args.list:
        for j in jobs:
            print("%-24s %-14s %10s  needs %-32s %s" % (j["id"], j["model"], fmt_gib(j["estimate"].get("device_peak_bytes", 0)),
                                                     ",".join(j["requires"]), j.get("what", "")))
        return 0
    if not os.path.exists(args.probe):
        raise SystemExit("campaign: no probe script at %s" % args.probe)
    for sub in ("logs", "jobs"):
        os.makedirs(os.path.join(args.out, sub), exist_ok=True)
    results = os.path.join(args.out, "results.jsonl")
    earlier = {}
    if os.path.exists(results):
        if args.fresh:
            os.replace(results, results + ".%d" % int(time.time()))
        else:
            earlier = read_results(results)
    if args.resume:
        earlier.update(read_results(args.resume))
    env = environment(args.python)
    with open(os.path.join(args.out, "environment.json"), "w") as f:
        json.dump(dict(env, started_at=now_utc(), argv=sys.argv[1:]), f, indent=1, sort_keys=True)
    def have(m):
        if not env["modules"].get(m):
            return "missing"
        return env["versions"].get(m) or "(no version)"
    log("%d jobs; python %s; torch %s, transformers %s, peft %s; GPU %s (%s), driver %s; budget %d s" % (
        len(jobs), env.get("python"), have("torch"), have("transformers"), have("peft"),
        (env.get("gpus") or [{}])[0].get("name", "none seen"),
        env.get("gpu_source", env.get("nvml_error", "")), env.get("driver", "?"), args.budget))
    camp = Campaign(args, plan, env)
    kept = {i: r for i, r in earlier.items() if r.get("status") in KEPT}
    # Rewrite the file with what is kept, then append as jobs end, so a
    # killed campaign leaves every finished job on disk.
    with open(results + ".tmp", "w") as f:
        for r in kept.values():
            f.write(json.dumps(r, sort_keys=True) + "\n")
    os.replace(results + ".tmp", results)
    counts = {}
    with open(results, "a") as out:
        for n, job in enumerate(jobs, 1):
            if job["id"] in kept:
                rec = kept[job["id"]]
                log("[%d/%d] kept from the earlier run: %s" % (n, len(jobs), describe(rec)))
            else:
                rec = camp.run(job)
                out.write(json.dumps(rec, sort_keys=True) + "\n")
                out.flush()
                log("[%d/%d] %s" % (n, len(jobs), describe(rec)))
            counts[rec["status"]] = counts.get(rec["status"], 0) + 1
    summary = ", ".join("%d %s" % (v, k) for k, v in sorted(counts.items()))
    log("done in %.0f s: %s; results in %s" % (time.monotonic() - camp.start, summary, results))
    with open(os.path.join(args.out, "summary.txt"), "w") as f:
        f.write(summary + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
