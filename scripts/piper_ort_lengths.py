#!/usr/bin/env python3
"""ONNX Runtime's audio length for each committed sentence at scales (0, 1, 0): the oracle of
tests/models/piper_voice_test.cpp for the length (the values are checked against lockstep's
float64 reference). Writes tests/fixtures/piper/ort_lengths.json.

  .venv/bin/python scripts/piper_ort_lengths.py .cache/voices/en_US-joe-medium.onnx
"""
import json
import os
import sys

import numpy as np
import onnxruntime as ort

voice = sys.argv[1]
root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
fixture = os.path.join(root, "tests", "fixtures", "piper", "sentences.json")
out_path = os.path.join(root, "tests", "fixtures", "piper", "ort_lengths.json")
sess = ort.InferenceSession(voice, providers=["CPUExecutionProvider"])
rows = []
for s in json.load(open(fixture, encoding="utf-8"))["sentences"]:
    ids = np.array([s["ids"]], dtype=np.int64)
    y = sess.run(None, {"input": ids, "input_lengths": np.array([ids.shape[1]], dtype=np.int64),
                        "scales": np.array([0, 1, 0], dtype=np.float32)})[0]
    rows.append({"text": s["text"], "phonemes": ids.shape[1], "shape": list(y.shape)})
    print(ids.shape[1], y.shape, s["text"][:40])
with open(out_path + ".part", "w", encoding="utf-8") as f:
    json.dump({"voice": os.path.basename(voice), "onnxruntime": ort.__version__, "scales": [0, 1, 0],
               "sentences": rows}, f, indent=1)
os.replace(out_path + ".part", out_path)
