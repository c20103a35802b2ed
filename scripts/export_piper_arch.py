#!/usr/bin/env python3
"""A Piper-architecture voice from Piper's own VITS code (piper-tts: piper/train/vits), with
random seeded weights, exported to ONNX the way Piper's export_onnx.py does (opset 15, inputs
input / input_lengths / scales [/ sid], dynamic batch, phonemes and time), plus float64 PyTorch
outputs at scales (0, 1, 0) for several phoneme counts: the oracle of
tests/models/piper_arch_test.cpp. Needs torch (the GPU machine has it) and Piper's vits package
(pip install piper-tts, or --piper-src pointing at a folder holding piper/train/vits).

  python3 scripts/export_piper_arch.py --out tests/fixtures/piper_arch [--speakers 1|4]
"""
import argparse
import os
import sys

import numpy as np
import torch


def build(speakers):
    from piper.train.vits.models import SynthesizerTrn

    torch.manual_seed(20261201 + speakers)
    # Piper's VITS, small: the same modules (relative-attention text encoder, stochastic duration
    # predictor with spline flows, residual coupling flow, HiFi-GAN generator), fewer channels.
    model = SynthesizerTrn(
        n_vocab=256, spec_channels=513, segment_size=32, inter_channels=48, hidden_channels=48,
        filter_channels=96, n_heads=2, n_layers=2, kernel_size=3, p_dropout=0.0, resblock="2",
        resblock_kernel_sizes=(3, 5, 7), resblock_dilation_sizes=((1, 2), (2, 6), (3, 12)),
        upsample_rates=(8, 8, 4), upsample_initial_channel=64, upsample_kernel_sizes=(16, 16, 8),
        n_speakers=speakers, gin_channels=32 if speakers > 1 else 0, use_sdp=True)
    model.eval()
    with torch.no_grad():
        model.dec.remove_weight_norm()
    return model


def forward_for(model):
    def infer_forward(text, text_lengths, scales, sid=None):  # as Piper's export_onnx.py wraps it
        return model.infer(text, text_lengths, noise_scale=scales[0], length_scale=scales[1],
                           noise_scale_w=scales[2], sid=sid)[0].unsqueeze(1)
    return infer_forward


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--speakers", type=int, default=1)
    ap.add_argument("--piper-src", help="folder with piper/train/vits when piper-tts is not installed")
    ap.add_argument("--lengths", default="9,31,77")
    args = ap.parse_args()
    if args.piper_src:
        sys.path.insert(0, args.piper_src)
    os.makedirs(args.out, exist_ok=True)
    stem = f"piper_arch_s{args.speakers}"
    model = build(args.speakers)
    model.forward = forward_for(model)
    multi = args.speakers > 1
    ids = torch.randint(0, 256, (1, 50), dtype=torch.long)
    dummy = (ids, torch.LongTensor([50]), torch.FloatTensor([0.667, 1.0, 0.8]), torch.LongTensor([0]) if multi else None)
    names = ["input", "input_lengths", "scales"] + (["sid"] if multi else [])
    axes = {"input": {0: "batch_size", 1: "phonemes"}, "input_lengths": {0: "batch_size"},
            "output": {0: "batch_size", 2: "time"}}
    path = os.path.join(args.out, stem + ".onnx")
    kwargs = dict(opset_version=15, input_names=names, output_names=["output"], dynamic_axes=axes)
    try:
        torch.onnx.export(model, dummy, path, dynamo=False, **kwargs)  # the TorchScript exporter, as Piper
    except TypeError:
        torch.onnx.export(model, dummy, path, **kwargs)
    # The float64 oracle: the same weights in double, no noise.
    model64 = build(args.speakers).double()
    model64.forward = forward_for(model64)
    rng = np.random.default_rng(7 + args.speakers)
    for n in [int(x) for x in args.lengths.split(",")]:
        x = rng.integers(1, 256, size=(1, n)).astype(np.int64)
        sid = np.array([args.speakers - 1], dtype=np.int64) if multi else None
        with torch.no_grad():
            y = model64(torch.from_numpy(x), torch.LongTensor([n]), torch.tensor([0.0, 1.0, 0.0], dtype=torch.float64),
                        torch.from_numpy(sid) if multi else None)
        arrays = {"input": x, "input_lengths": np.array([n], dtype=np.int64),
                  "scales": np.array([0, 1, 0], dtype=np.float32), "output64": y.numpy()}
        if multi:
            arrays["sid"] = sid
        np.savez(os.path.join(args.out, f"{stem}_n{n}.npz"), **arrays)
        print(stem, n, "phonemes ->", tuple(y.shape))
    print("wrote", path, os.path.getsize(path), "bytes")


if __name__ == "__main__":
    main()
