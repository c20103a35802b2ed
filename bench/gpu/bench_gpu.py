#!/usr/bin/env python3
"""GPU benchmark: lockstep CUDA against PyTorch eager (fp32/TF32/fp16/bf16) and torch.compile fp32
on the VITS presets, same weights and inputs, in one run. Prints JSON rows, then one ratio table.

Models are built as ../shared/tools/vits_export.py builds them (--part full --scaled, seed 0) and
exported with torch's TorchScript exporter (dynamo=False, as bench_peers.py does); the oracle is
the same module run in float64 on the GPU.
Usage: bench_gpu.py --bin DIR (lockstep_bench) --tools DIR (vits_export.py, bench_peers.py) --work DIR
Environment: PRESETS (seed,low,ljs), FRAMES (1024), RUNS (50), VARIANTS (1: also time variants),
MODES (fp32,tf32,fp16,bf16: lockstep --precision modes, each against eager in the same mode)."""
import argparse, json, os, subprocess, sys, time


def log(*a):
    print(*a, flush=True)


def export(name, frames, work, vits_export):
    import numpy as np, torch
    cfg = vits_export.PRESETS[name]
    m = vits_export.Decoder(cfg)
    vits_export.synth_weights(m, 0, 0.1, True)
    m.eval()
    z, mk = vits_export.seed_inputs(cfg["inter"], frames)
    stem = f"{work}/{name}_T{frames}"
    zt, mt = torch.from_numpy(z), torch.from_numpy(mk)
    with torch.no_grad():
        try:
            torch.onnx.export(m, (zt, mt), stem + ".onnx", input_names=["z_p", "y_mask"], output_names=["out"],
                              opset_version=17, do_constant_folding=True, dynamo=False)
        except TypeError:
            torch.onnx.export(m, (zt, mt), stem + ".onnx", input_names=["z_p", "y_mask"], output_names=["out"],
                              opset_version=17, do_constant_folding=True)
        ref = m.double().cuda()(zt.double().cuda(), mt.double().cuda()).cpu().numpy()
    np.save(stem + ".ref64.npy", ref)
    np.save(stem + ".z_p.npy", z)
    np.save(stem + ".y_mask.npy", mk)
    return stem


def peers(name, frames, bp, vits_export):
    """Rows for eager fp32/tf32/fp16/bf16 and torch.compile fp32 (bench_peers.py's timing and error)."""
    import torch
    rows = []
    cfg = vits_export.PRESETS[name]
    m = vits_export.Decoder(cfg)
    vits_export.synth_weights(m, 0, 0.1, True)
    m.eval()
    z, mk = vits_export.seed_inputs(cfg["inter"], frames)
    zt, mt = torch.from_numpy(z), torch.from_numpy(mk)
    with torch.no_grad():
        ref = m.double().cuda()(zt.double().cuda(), mt.double().cuda()).cpu()
        m.float()
        mc = m.cuda()
        zc, mkc = zt.cuda(), mt.cuda()
        for tf32 in (False, True):
            torch.backends.cuda.matmul.allow_tf32 = tf32
            torch.backends.cudnn.allow_tf32 = tf32
            out = mc(zc, mkc)
            rows.append(dict(preset=name, peer="torch-eager", mode="tf32" if tf32 else "fp32",
                             ms=bp.med_cuda(lambda: mc(zc, mkc)), rel_l2=bp.rel(out, ref)))
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        for dt in (torch.float16, torch.bfloat16):
            with torch.autocast("cuda", dtype=dt):
                out = mc(zc, mkc)
                rows.append(dict(preset=name, peer="torch-eager", mode=str(dt).split(".")[1],
                                 ms=bp.med_cuda(lambda: mc(zc, mkc)), rel_l2=bp.rel(out.float(), ref)))
        try:
            cm = torch.compile(mc)
            t0 = time.time()
            out = cm(zc, mkc)
            torch.cuda.synchronize()
            ct = time.time() - t0
            rows.append(dict(preset=name, peer="torch-compile", mode="fp32", compile_s=ct,
                             ms=bp.med_cuda(lambda: cm(zc, mkc)), rel_l2=bp.rel(out, ref)))
        except Exception as e:  # report, keep going
            rows.append(dict(preset=name, peer="torch-compile", mode="fp32", error=str(e)[:300]))
    return rows


def lockstep(binary, stem, runs, env_extra=None, timeout=180, precision="fp32", backend="cuda", warmup=5):
    env = dict(os.environ)
    env.update(env_extra or {})
    cmd = [binary, stem + ".onnx", "--backend", backend, "--inputs", stem + ".z_p.npy", stem + ".y_mask.npy",
           "--ref", stem + ".ref64.npy", "--runs", str(runs), "--warmup", str(warmup),
           "--precision", precision]
    try:
        p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return dict(error=f"timed out after {timeout} s"), ""
    if p.returncode != 0:
        return dict(error=(p.stderr or p.stdout)[-400:]), p.stderr
    return json.loads(p.stdout.strip().splitlines()[-1]), p.stderr


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--tools", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--profile-log", default="")
    a = ap.parse_args()
    sys.path.insert(0, a.tools)
    import vits_export, bench_peers as bp
    frames = int(os.environ.get("FRAMES", "1024"))
    presets = os.environ.get("PRESETS", "seed,low,ljs").split(",")
    runs = int(os.environ.get("RUNS", "50"))
    variants = os.environ.get("VARIANTS", "1") == "1"
    modes = [m for m in os.environ.get("MODES", "fp32,tf32,fp16,bf16").split(",") if m != "fp32"]
    mode_rows = []
    os.makedirs(a.work, exist_ok=True)
    binary = os.path.join(a.bin, "lockstep_bench")
    table = []
    prof = open(a.profile_log, "w") if a.profile_log else None
    for name in presets:
        stem = export(name, frames, a.work, vits_export)
        ls, _ = lockstep(binary, stem, runs)
        log(json.dumps(dict(preset=name, peer="lockstep-cuda", mode="fp32", **ls)))
        if prof:
            _, err = lockstep(binary, stem, 3, {"LOCKSTEP_CUDA_PROFILE": "1"})
            prof.write(f"=== {name} T{frames}\n{err}\n")
            prof.flush()
        if variants:
            for label, env in (("convT=cudnn", {"LOCKSTEP_CUDA_CONVT": "cudnn"}),
                               ("fuse_residual=0", {"LOCKSTEP_CUDA_FUSE_RESIDUAL": "0"})):
                v, _ = lockstep(binary, stem, 20, env)
                log(json.dumps(dict(preset=name, peer="lockstep-cuda", variant=label, **v)))
        fast = {}
        for mode in modes:
            fast[mode], _ = lockstep(binary, stem, runs, precision=mode)
            log(json.dumps(dict(preset=name, peer="lockstep-cuda", mode=mode, **fast[mode])))
        rows = peers(name, frames, bp, vits_export)
        for r in rows:
            log(json.dumps(r))
        eager_mode = {"fp16": "float16", "bf16": "bfloat16"}
        for mode in ["fp32"] + modes:
            mode_rows.append((name, mode, ls if mode == "fp32" else fast[mode],
                              next((r for r in rows if r["peer"] == "torch-eager" and r["mode"] == eager_mode.get(mode, mode) and "ms" in r), {})))
        get = lambda peer, mode: next((r for r in rows if r["peer"] == peer and r["mode"] == mode and "ms" in r), {})
        table.append((name, ls, get("torch-eager", "fp32"), get("torch-compile", "fp32"), get("torch-eager", "tf32")))
    log("")
    log(f"GPU benchmark, batch 1, {frames} frames, medians (lockstep: {runs} runs, host wall clock incl. copies; torch: CUDA events)")
    log("lockstep device ms: the kernels alone (event nodes in its CUDA graph), without the copies, as torch's events time it")
    log("| preset | lockstep cuda ms | device ms | rel L2 | compile ms | eager fp32 ms | rel L2 | torch.compile ms | rel L2 | eager/lockstep | compile/lockstep | compile/lockstep device |")
    log("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for name, ls, ef, tc, _ in table:
        lm, dm = ls.get("median_ms"), ls.get("device_median_ms")
        f = lambda x, k="ms", fmt="{:.2f}": fmt.format(x[k]) if k in x and x[k] is not None else "n/a"
        ratio = lambda x, base=lm: "{:.2f}x".format(x["ms"] / base) if base and "ms" in x else "n/a"
        log(f"| {name} | {f(ls, 'median_ms')} | {f(ls, 'device_median_ms')} | {f(ls, 'rel_l2', '{:.2e}')} | {f(ls, 'compile_ms', '{:.0f}')} | {f(ef)} | "
            f"{f(ef, 'rel_l2', '{:.2e}')} | {f(tc)} | {f(tc, 'rel_l2', '{:.2e}')} | {ratio(ef)} | {ratio(tc)} | {ratio(tc, dm)} |")
    log("")
    log("Per precision mode: lockstep --precision MODE against PyTorch eager in the same mode (fp16/bf16: autocast)")
    log("| preset | mode | lockstep ms | rel L2 | eager ms | rel L2 | eager/lockstep |")
    log("|---|---|---|---|---|---|---|")
    for name, mode, lr, er in mode_rows:
        f = lambda x, k, fmt: fmt.format(x[k]) if k in x and x[k] is not None else "n/a"
        lm = lr.get("median_ms")
        ratio = "{:.2f}x".format(er["ms"] / lm) if lm and "ms" in er else "n/a"
        log(f"| {name} | {mode} | {f(lr, 'median_ms', '{:.2f}')} | {f(lr, 'rel_l2', '{:.2e}')} | {f(er, 'ms', '{:.2f}')} | "
            f"{f(er, 'rel_l2', '{:.2e}')} | {ratio} |")


if __name__ == "__main__":
    main()
