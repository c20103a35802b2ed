#!/usr/bin/env bash
# TVM on the GPU machine (issue 24): its wheel (85 MB) does not fit one call (64 MiB with the
# working tree), so it travels in three thirds, in three calls made back to back while the machine
# is warm: build-tvm1/ and build-tvm2/ (run_tvm.sh 1 and 2 copy them to /tmp; the second also
# carries the small wheels TVM needs for Python 3.12, downloaded here from PyPI), then build-tvm3/
# with the last third, the CLI with the system libraries the machine lacks, and the 174-node model.
set -euo pipefail
cd "$(dirname "$0")/../.."
B=${BUILD:-build}
W=/tmp/lockstep-tvm-wheels && rm -rf $W && mkdir -p $W
.venv/bin/python3 -m pip download -q --disable-pip-version-check --no-deps --only-binary=:all: --python-version 3.12 \
  --platform manylinux_2_28_x86_64 -d $W apache-tvm==0.25.0.post1 apache-tvm-ffi==0.1.12 ml_dtypes typing_extensions
rm -rf build-tvm1 build-tvm2 build-tvm3 && mkdir -p build-tvm1 build-tvm2 build-tvm3
tvm=$(ls $W/apache_tvm-0.25*.whl)
split -n 3 -d "$tvm" "build-tvm1/$(basename "$tvm")."
mv "build-tvm1/$(basename "$tvm").01" build-tvm2/
mv "build-tvm1/$(basename "$tvm").02" build-tvm3/
mv $W/apache_tvm_ffi*.whl $W/ml_dtypes*.whl $W/typing_extensions*.whl build-tvm2/
S=/tmp/lockstep-tvm-pack && rm -rf $S && mkdir -p $S/bin $S/libs $S/models
strip -o $S/bin/lockstep "$B/lockstep"
ldd $S/bin/lockstep | awk '$3 ~ /^\// {print $3}' | sort -u | while read -r lib; do
  case "$(basename "$lib")" in
    libc.so*|libm.so*|libstdc++*|libgcc_s*|libpthread*|ld-linux*|libdl.so*|librt.so*|libz.so*|libcu*|libnv*) ;;
    *) cp -L "$lib" $S/libs/ ;;
  esac
done
cp ../shared/models/vits_seed_174.* $S/models/
tar -C $S -cJf build-tvm3/pack.tar.xz .
rm -rf $S $W
du -sh build-tvm1 build-tvm2 build-tvm3
