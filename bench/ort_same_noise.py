#!/usr/bin/env python3
"""ONNX Runtime's float32 distance from float64 on a Piper voice with noise on, fed the same noise
(issue 48 point 1; docs/accuracy.md): the project's float32 bar for a whole voice is "no farther from
float64 than ONNX Runtime's float32 on the same input", and with noise on the input includes the two
RandomNormalLike draws, which ONNX Runtime makes with its own generator. So:

1. the voice with both draws also as graph outputs: lockstep's float64 reference at --seed gives the
   audio and the noise it drew;
2. the voice with both draws as graph inputs: ONNX Runtime (CPU, float32) and lockstep --test run it
   on that noise rounded to float32 (lockstep's own draws are that rounding: the script checks that
   lockstep's fed run has the bits of its run that drew the noise itself).

Per committed sentence at scales (0.667, 1, 0.8): rel L2 of each against the reference's audio.

  .venv/bin/python bench/ort_same_noise.py [--voice .cache/voices/en_US-joe-medium.onnx]
      [--lockstep build/lockstep] [--test cpu] [--seed 7] [--threads 2]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench", "gpu"))
from f64_relerr import rel_l2  # noqa: E402  (None when the lengths differ)

SCALES = [0.667, 1.0, 0.8]


def noise_models(voice, tmp):
    """The voice with its RandomNormalLike outputs tapped, and with them as inputs."""
    m = onnx.load(voice)
    draws = [n for n in m.graph.node if n.op_type == "RandomNormalLike"]
    names = [n.output[0] for n in draws]
    for name in names:
        m.graph.output.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, None))
    tap = os.path.join(tmp, "tap.onnx")
    onnx.save(m, tap)
    m = onnx.load(voice)
    kept = [n for n in m.graph.node if n.op_type != "RandomNormalLike"]
    del m.graph.node[:]
    m.graph.node.extend(kept)
    for i, name in enumerate(names):  # a VITS draw is [1, channels, steps]
        m.graph.input.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, [1, f"noise{i}_c", f"noise{i}_t"]))
    fed = os.path.join(tmp, "fed.onnx")
    onnx.save(m, fed)
    return tap, fed, names


def lockstep_run(args, model, backend, inputs, out, *extra):
    subprocess.run([args.lockstep, "run", model, "--backend", backend, "--inputs", *inputs, "--out", out, *extra],
                   check=True, capture_output=True)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--voice", default=os.path.join(ROOT, ".cache/voices/en_US-joe-medium.onnx"))
    ap.add_argument("--lockstep", default=os.path.join(ROOT, "build/lockstep"))
    ap.add_argument("--test", default="cpu", help="the lockstep backend fed the same noise")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--threads", type=int, default=2, help="ONNX Runtime's intra-op threads")
    args = ap.parse_args()
    sentences = json.load(open(os.path.join(ROOT, "tests/fixtures/piper/sentences.json")))["sentences"]
    so = ort.SessionOptions()
    so.intra_op_num_threads = args.threads
    print(f"| sentence | samples | ONNX Runtime float32 | lockstep {args.test} (fed) | lockstep {args.test} (own draw) | same bits |")
    print("|---|---|---|---|---|---|")
    worst = {"ort": 0.0, "lockstep": 0.0}
    with tempfile.TemporaryDirectory() as tmp:
        tap, fed, names = noise_models(args.voice, tmp)
        session = ort.InferenceSession(fed, so, providers=["CPUExecutionProvider"])
        for k, s in enumerate(sentences):
            d = os.path.join(tmp, str(k))
            os.makedirs(d)
            feeds = {"input": np.array([s["ids"]], np.int64), "input_lengths": np.array([len(s["ids"])], np.int64),
                     "scales": np.array(SCALES, np.float32)}
            files = []
            for name, value in feeds.items():
                files.append(os.path.join(d, name + ".npy"))
                np.save(files[-1], value)
            seed = ["--seed", str(args.seed)]
            ref_dir = lockstep_run(args, tap, "reference", files, os.path.join(d, "ref"), *seed)
            ref = np.load(os.path.join(ref_dir, "output.npy"))
            noise_files = []
            for name in names:  # lockstep writes NAME.npy with '/' as '_'
                noise = np.load(os.path.join(ref_dir, name.replace("/", "_") + ".npy")).astype(np.float32)
                feeds[name] = noise
                noise_files.append(os.path.join(d, f"noise{len(noise_files)}.npy"))
                np.save(noise_files[-1], noise)
            ort_audio = session.run(None, feeds)[0]
            # Still a Piper voice (its extra inputs aside): the backend's default float64 prefixes apply.
            fed_audio = np.load(os.path.join(lockstep_run(args, fed, args.test, files + noise_files, os.path.join(d, "fed")), "output.npy"))
            own_audio = np.load(os.path.join(lockstep_run(args, args.voice, args.test, files, os.path.join(d, "own"), *seed), "output.npy"))
            r_ort, r_fed, r_own = rel_l2(ort_audio, ref), rel_l2(fed_audio, ref), rel_l2(own_audio, ref)
            same = fed_audio.shape == own_audio.shape and bool((fed_audio == own_audio).all())
            worst["ort"] = max(worst["ort"], r_ort or float("inf"))
            worst["lockstep"] = max(worst["lockstep"], r_fed or float("inf"))
            fmt = lambda r: f"{r:.3g}" if r is not None else "length differs"
            print(f"| {k} | {ref.size} | {fmt(r_ort)} | {fmt(r_fed)} | {fmt(r_own)} | {same} |", flush=True)
    print(f"worst: ONNX Runtime {worst['ort']:.3g}, lockstep {args.test} {worst['lockstep']:.3g} (noise on, seed {args.seed})")


if __name__ == "__main__":
    main()
