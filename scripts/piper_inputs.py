#!/usr/bin/env python3
"""Text -> a Piper voice's inputs, for `lockstep run` (docs/voices.md).

Uses the piper-tts package (`pip install piper-tts`: its espeak-ng phonemizer) and the voice's
.onnx.json (phoneme id map, espeak voice, default scales). One folder per sentence under --out,
each with input.npy (int64 [1, phonemes]), input_lengths.npy (int64 [1]), scales.npy (float32 [3]
= noise_scale, length_scale, noise_w) and, for a multi-speaker voice, sid.npy (int64 [1]).

  python3 scripts/piper_inputs.py --voice en_US-joe-medium.onnx --text "Hello there." --out in/
  python3 scripts/piper_inputs.py --voice V.onnx --fixture tests/fixtures/piper/sentences.json \
      --text-file sentences.txt     # writes the committed fixture (text + ids) instead
  python3 scripts/piper_inputs.py --voice V.onnx --from-fixture tests/fixtures/piper/sentences.json \
      --scales 0,1,0 --out in/      # the committed sentences' folders, no phonemizer needed
"""
import argparse
import json
import os
import sys

import numpy as np


def load_config(voice):
    with open(voice + ".json", encoding="utf-8") as f:
        return json.load(f)


def phoneme_ids(voice, text):
    """Per sentence: (phonemes, ids), exactly as Piper's own PiperVoice computes them."""
    from piper import PiperVoice  # piper-tts

    v = PiperVoice.load(voice, config_path=voice + ".json")
    out = []
    for phonemes in v.phonemize(text):
        out.append(("".join(phonemes), [int(i) for i in v.phonemes_to_ids(phonemes)]))
    return out


def write_inputs(folder, ids, scales, sid=None):
    os.makedirs(folder, exist_ok=True)
    np.save(os.path.join(folder, "input.npy"), np.array([ids], dtype=np.int64))
    np.save(os.path.join(folder, "input_lengths.npy"), np.array([len(ids)], dtype=np.int64))
    np.save(os.path.join(folder, "scales.npy"), np.array(scales, dtype=np.float32))
    if sid is not None:
        np.save(os.path.join(folder, "sid.npy"), np.array([sid], dtype=np.int64))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--voice", required=True, help="the voice's .onnx (its .onnx.json beside it)")
    ap.add_argument("--text", help="text; one input folder per sentence")
    ap.add_argument("--text-file", help="a file of sentences, one per line")
    ap.add_argument("--out", help="folder for the per-sentence input folders")
    ap.add_argument("--fixture", help="write text + phoneme ids as JSON here instead of .npy folders")
    ap.add_argument("--from-fixture", help="take the sentences (ids) from this committed JSON fixture")
    ap.add_argument("--scales", help="noise_scale,length_scale,noise_w (default: the voice's .onnx.json)")
    ap.add_argument("--sid", type=int, help="speaker id for a multi-speaker voice")
    args = ap.parse_args()
    cfg = load_config(args.voice)
    inf = cfg.get("inference", {})
    scales = ([float(x) for x in args.scales.split(",")] if args.scales else
              [inf.get("noise_scale", 0.667), inf.get("length_scale", 1.0), inf.get("noise_w", 0.8)])
    if len(scales) != 3:
        sys.exit("--scales needs three numbers")
    if args.from_fixture:
        with open(args.from_fixture, encoding="utf-8") as f:
            sentences = json.load(f)["sentences"]
        texts = None
    else:
        texts = []
    if texts is not None and args.text:
        texts.append(args.text)
    if texts is not None and args.text_file:
        with open(args.text_file, encoding="utf-8") as f:
            texts += [line.strip() for line in f if line.strip()]
    if texts is not None and not texts:
        sys.exit("give --text, --text-file or --from-fixture")
    if texts is not None:
        sentences = []
    for text in texts or []:
        for phonemes, ids in phoneme_ids(args.voice, text):
            sentences.append({"text": text, "phonemes": phonemes, "ids": ids})
    if args.fixture:
        tmp = args.fixture + ".part"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump({"voice": os.path.basename(args.voice), "sentences": sentences}, f, ensure_ascii=False, indent=1)
        os.replace(tmp, args.fixture)
        print(f"{args.fixture}: {len(sentences)} sentences")
        return
    if not args.out:
        sys.exit("give --out (or --fixture)")
    sid = args.sid if cfg.get("num_speakers", 1) > 1 else None
    for k, s in enumerate(sentences):
        folder = os.path.join(args.out, f"{k:03d}")
        write_inputs(folder, s["ids"], scales, sid)
        print(f"{folder}: {len(s['ids'])} phoneme ids: {s['text']}")


if __name__ == "__main__":
    main()
