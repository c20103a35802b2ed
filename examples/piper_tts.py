#!/usr/bin/env python3
"""Text -> .wav with a Piper voice, run by lockstep (docs/voices.md, docs/python.md).

Phonemizes with piper-tts (`pip install piper-tts`: Piper's own espeak-ng phonemizer and id map)
or, without it, takes the committed sentences' phoneme ids from --from-fixture. Each sentence
runs through one compiled model (lengths change per call; lockstep specialises each call to its
inputs) and the sentences' audio is written as one 16-bit mono WAV.

  ./scripts/fetch-voice.sh          # the joe voice into .cache/voices/
  python3 examples/piper_tts.py --text "Hello there. How are you?" --out hello.wav
  python3 examples/piper_tts.py --from-fixture tests/fixtures/piper/sentences.json --backend cuda
  python3 examples/piper_tts.py --text "Same bits." --seed 7 --backend cpu   # = --seed 7 on reference/cuda
"""
import argparse
import json
import os
import sys
import time
import wave

import numpy as np

import lockstep


def sentences_from_text(voice, text):
    """(phonemes, ids) per sentence, exactly as Piper's PiperVoice computes them."""
    try:
        from piper import PiperVoice  # piper-tts
    except ImportError:
        sys.exit("piper_tts: no phonemizer: pip install piper-tts, or give --from-fixture")
    v = PiperVoice.load(voice, config_path=voice + ".json")
    return [("".join(p), [int(i) for i in v.phonemes_to_ids(p)]) for p in v.phonemize(text)]


def sentences_from_fixture(path):
    with open(path, encoding="utf-8") as f:
        return [(s["text"], s["ids"]) for s in json.load(f)["sentences"]]


def feeds_for(model, ids, scales, sid):
    """The voice's inputs: input int64 [1, N], input_lengths int64 [1], scales float32 [3] and, for
    a multi-speaker voice, sid int64 [1]."""
    feeds = {"input": np.array([ids], np.int64), "input_lengths": np.array([len(ids)], np.int64),
             "scales": np.array(scales, np.float32)}
    if any(i.name == "sid" for i in model.inputs):
        feeds["sid"] = np.array([sid], np.int64)
    return feeds


def write_wav(path, audio, rate):
    """16-bit mono PCM, as `lockstep run --wav` writes it (clipped to [-1, 1], times 32767, rounded)."""
    if np.isnan(audio).any():
        sys.exit("piper_tts: the audio has NaN samples; nothing written")
    pcm = np.rint(np.clip(audio.astype(np.float64), -1.0, 1.0) * 32767.0).astype("<i2")
    part = path + ".part"  # renamed when whole: never half a file
    with wave.open(part, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(pcm.tobytes())
    os.replace(part, path)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--voice", default=".cache/voices/en_US-joe-medium.onnx",
                    help="the voice's .onnx, its .onnx.json beside it (default: the one fetch-voice.sh fetches)")
    ap.add_argument("--text", help="the text to speak")
    ap.add_argument("--from-fixture", help="speak the sentences of this JSON fixture (no phonemizer needed)")
    ap.add_argument("--backend", default="cpu", help="reference, cpu or cuda (default cpu)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the voice's noise: the same seed, the same bits")
    ap.add_argument("--scales", help="noise_scale,length_scale,noise_w (default: the voice's .onnx.json)")
    ap.add_argument("--sid", type=int, default=0, help="speaker of a multi-speaker voice (default 0)")
    ap.add_argument("--out", default="out.wav", help="the .wav to write (default out.wav)")
    args = ap.parse_args()
    if not os.path.exists(args.voice):
        sys.exit(f"piper_tts: no voice at {args.voice} (./scripts/fetch-voice.sh fetches the joe voice)")
    if bool(args.text) == bool(args.from_fixture):
        ap.error("give --text or --from-fixture")

    with open(args.voice + ".json", encoding="utf-8") as f:
        config = json.load(f)
    inference = config.get("inference", {})
    scales = ([float(x) for x in args.scales.split(",")] if args.scales else
              [inference.get("noise_scale", 0.667), inference.get("length_scale", 1.0), inference.get("noise_w", 0.8)])
    if len(scales) != 3:
        ap.error("--scales needs three numbers")
    rate = int(config.get("audio", {}).get("sample_rate", 22050))
    sentences = (sentences_from_fixture(args.from_fixture) if args.from_fixture
                 else sentences_from_text(args.voice, args.text))

    start = time.perf_counter()
    model = lockstep.compile(args.voice, backend=args.backend)
    print(f"{args.voice}: compiled for {args.backend} in {time.perf_counter() - start:.1f} s")
    pieces = []
    for k, (label, ids) in enumerate(sentences):
        start = time.perf_counter()
        audio = model.run(None, feeds_for(model, ids, scales, args.sid), seed=args.seed)[0]
        pieces.append(audio.reshape(-1))  # "output" is [1, 1, 1, samples]
        print(f"sentence {k}: {len(ids)} phoneme ids -> {audio.size / rate:.2f} s of audio in "
              f"{time.perf_counter() - start:.2f} s: {label}")
    audio = np.concatenate(pieces)
    write_wav(args.out, audio, rate)
    print(f"wav: {args.out} ({audio.size} samples at {rate} Hz, {audio.size / rate:.2f} s)")


if __name__ == "__main__":
    try:
        main()
    except lockstep.Error as e:  # a bad id, a bad scale, an unsupported op: one line, like the CLI's
        sys.exit(f"piper_tts: {e}")
