#!/usr/bin/env python3
"""Export one VITS decoder preset (full decoder, --scaled weights, seed 0) at frames T and batch B
with static shapes, as bench/gpu/bench_gpu.py exports batch 1: STEM.onnx, STEM.z_p.npy,
STEM.y_mask.npy, STEM.ref64.npy (the same module in float64).

  export.py --preset seed --frames 1024 --batch 4 --out /tmp/sc/seed_T1024_B4 [--tools DIR]
            [--device cpu|cuda] [--export-device cpu|cuda] [--no-ref] [--check-ort] [--ort-only]

Batch rows are seed_inputs with a phase shift of PHASE_STEP frames per row (row 0 is the batch-1
input exactly); the mask stays all ones. Also importable: export_onnx, batch_inputs, build_module."""
import argparse, json, os, sys, time

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_TOOLS = os.path.join(HERE, "..", "..", "..", "shared", "tools")
PHASE_STEP = 5  # frames of shift between batch rows; sin period is 128, so rows differ
WEIGHT_SEED, WEIGHT_STD = 0, 0.1


def load_vits_export(tools):
    sys.path.insert(0, os.path.abspath(tools))
    import vits_export
    return vits_export


def build_module(vits_export, preset):
    m = vits_export.Decoder(vits_export.PRESETS[preset])
    vits_export.synth_weights(m, WEIGHT_SEED, WEIGHT_STD, True)
    return m.eval()


def batch_inputs(vits_export, preset, frames, batch):
    """z_p [B, C, T] (row b = seed_inputs shifted by b*PHASE_STEP frames), y_mask [B, 1, T] of ones."""
    import numpy as np
    ch = vits_export.PRESETS[preset]["inter"]
    z_long, _ = vits_export.seed_inputs(ch, frames + PHASE_STEP * (batch - 1))
    z = np.concatenate([z_long[:, :, PHASE_STEP * b:PHASE_STEP * b + frames] for b in range(batch)], axis=0)
    return np.ascontiguousarray(z, dtype=np.float32), np.ones((batch, 1, frames), dtype=np.float32)


def export_onnx(module, z, mask, path, device="cpu"):
    """Traces on `device` (the trace runs the model once: on a GPU that is much faster for big T x B)."""
    import torch
    module = module.float().to(device)
    zt, mt = torch.from_numpy(z).to(device), torch.from_numpy(mask).to(device)
    kw = dict(input_names=["z_p", "y_mask"], output_names=["out"], opset_version=17, do_constant_folding=True)
    with torch.no_grad():
        try:
            torch.onnx.export(module, (zt, mt), path, dynamo=False, **kw)
        except TypeError:  # older torch without the dynamo argument
            torch.onnx.export(module, (zt, mt), path, **kw)


def reference(module, z, mask, device="cpu"):
    """float64 oracle: the same module in double precision (module is converted in place)."""
    import torch
    with torch.no_grad():
        m = module.double().to(device)
        out = m(torch.from_numpy(z).double().to(device), torch.from_numpy(mask).double().to(device))
        return out.cpu().numpy()


def export(vits_export, preset, frames, batch, stem, device="cpu", with_ref=True, export_device="cpu"):
    """Writes the four files (ref64 only when with_ref); returns a small dict of facts."""
    import numpy as np
    t0 = time.time()
    m = build_module(vits_export, preset)
    z, mask = batch_inputs(vits_export, preset, frames, batch)
    os.makedirs(os.path.dirname(os.path.abspath(stem)), exist_ok=True)
    export_onnx(m, z, mask, stem + ".onnx", export_device)
    np.save(stem + ".z_p.npy", z)
    np.save(stem + ".y_mask.npy", mask)
    info = dict(preset=preset, frames=frames, batch=batch, stem=stem, export_s=round(time.time() - t0, 2))
    if with_ref:
        ref = reference(m, z, mask, device)
        np.save(stem + ".ref64.npy", ref)
        info.update(out_shape=list(ref.shape), finite=bool(np.isfinite(ref).all()))
    return info


def check_ort(stem, threads=2):
    """Relative L2 of ONNX Runtime CPU's output against STEM.ref64.npy."""
    import numpy as np, onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    s = ort.InferenceSession(stem + ".onnx", so, providers=["CPUExecutionProvider"])
    out = s.run(None, {"z_p": np.load(stem + ".z_p.npy"), "y_mask": np.load(stem + ".y_mask.npy")})[0]
    ref = np.load(stem + ".ref64.npy")
    return float(np.linalg.norm(out.astype(np.float64).ravel() - ref.ravel()) / np.linalg.norm(ref.ravel()))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--preset", default="seed", choices=["seed", "low", "ljs"])
    ap.add_argument("--frames", type=int, default=1024)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--out", required=True, help="output stem (no extension)")
    ap.add_argument("--tools", default=DEFAULT_TOOLS, help="folder with vits_export.py")
    ap.add_argument("--device", default="cpu", help="where the float64 oracle runs")
    ap.add_argument("--export-device", default="cpu", help="where the export's trace runs")
    ap.add_argument("--no-ref", action="store_true")
    ap.add_argument("--check-ort", action="store_true", help="print ONNX Runtime's rel L2 against ref64")
    ap.add_argument("--ort-only", action="store_true",
                    help="no export: only check existing STEM files with ONNX Runtime (no torch needed)")
    a = ap.parse_args()
    if a.ort_only:
        print(json.dumps(dict(stem=a.out, ort_rel_l2=check_ort(a.out))), flush=True)
        return
    info = export(load_vits_export(a.tools), a.preset, a.frames, a.batch, a.out, a.device, not a.no_ref, a.export_device)
    if a.check_ort and not a.no_ref:
        info["ort_rel_l2"] = check_ort(a.out)
    print(json.dumps(info), flush=True)


if __name__ == "__main__":
    main()
