#!/usr/bin/env bash
# Builds tests/fuzz/fuzz_spec, fuzz_pgl, fuzz_submit and fuzz_json with clang's libFuzzer, ASan and UBSan against the engine sources
# (and server/admission.c), into ${1:-build-fuzz}. Needs clang and the build dependencies of
# paragon (OpenCL, jansson, zlib headers and libraries).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=$(mkdir -p "${1:-$root/build-fuzz}" && cd "${1:-$root/build-fuzz}" && pwd)
cd "$root"
# The engine links the embedded kernels and inet examples, as meson generates them.
python3 scripts/embed.py pgn_kernel_sources "$out/embedded_kernels.c" \
    kernels/pgn_math.h kernels/pgn_ops.h kernels/pgn_inet_math.h kernels/pgn_inet_num.h \
    kernels/pgn_inet_port.h kernels/pgn_inet_dev.h kernels/gemm.cl kernels/tensor.cl kernels/inet.cl
python3 scripts/embed.py pgn_inet_examples "$out/embedded_inet_examples.c" \
    $(ls examples/inet/*.hvm examples/inet/*.expected)
${CC:-clang} -std=c17 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
    -ffp-contract=off -D_GNU_SOURCE -DCL_TARGET_OPENCL_VERSION=300 \
    -Iengine -Iengine/include -Ikernels -Iserver \
    tests/fuzz/fuzz_spec.c server/admission.c engine/*.c engine/*/*.c \
    "$out/embedded_kernels.c" "$out/embedded_inet_examples.c" \
    -lOpenCL -ljansson -lz -lm -lpthread -o "$out/fuzz_spec"
echo "built $out/fuzz_spec"
# pgl's reader and compiler (engine/lang/) with the HVM2 parser its nets must pass
${CC:-clang} -std=c17 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
    -ffp-contract=off -D_GNU_SOURCE -DCL_TARGET_OPENCL_VERSION=300 -Iengine -Iengine/include -Ikernels \
    tests/fuzz/fuzz_pgl.c engine/lang/*.c engine/inet/inet_parse.c engine/inet/inet_num.c engine/error.c \
    engine/text.c engine/clock.c -ljansson -lm -lpthread -o "$out/fuzz_pgl"
echo "built $out/fuzz_pgl"
# paragond's submission path with generated pgl programs (a live paragond: $PARAGOND when it runs)
${CC:-clang} -std=c17 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
    -ffp-contract=off -D_GNU_SOURCE -DCL_TARGET_OPENCL_VERSION=300 -Iengine -Iengine/include -Ikernels -Itests \
    tests/fuzz/fuzz_submit.c tests/http_client.c engine/lang/*.c engine/inet/inet_parse.c engine/inet/inet_num.c \
    engine/error.c engine/text.c engine/clock.c -ljansson -lcurl -lm -lpthread -o "$out/fuzz_submit"
echo "built $out/fuzz_submit"
# the JSON reader and printer (engine/json_text.c) against jansson
${CC:-clang} -std=c17 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
    -ffp-contract=off -D_GNU_SOURCE -Iengine/include tests/fuzz/fuzz_json.c engine/json_text.c engine/text.c \
    -ljansson -lm -o "$out/fuzz_json"
echo "built $out/fuzz_json"
