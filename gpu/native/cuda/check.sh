#!/bin/sh
# `npm run check:cuda`: the CUDA engine's checks, for a machine with a CUDA device (none of this
# project's usual machines has one). Needs the addons built (`npm run build:native` where nvcc is;
# else gpu/native/build and gpu/native/cuda/build copied from a machine that built them: the CUDA
# addon links libcudart statically and needs only the driver). Runs every step, then exits 1 if
# any failed:
#   1. what the build and the device say (status.json's cuda entry, the addon's init());
#   2. test/gpu/cuda-backend.test.ts with TRIAD_REQUIRE_CUDA=1 (device numerics fail, not skip);
#   3. the transformer and Hugging Face model tests on the cuda backend, every product on the device;
#   4. triad bench hf-model --backend cuda --quick (default dispatch), with the device counters.
set -u
status=0
step() {
  echo "check:cuda: $*" >&2
  "$@" || status=1
}
export TRIAD_CUDA_REPORT=1
step node --import tsx -e "
  const m = await import('./gpu/cuda-addon.ts')
  const loaded = m.loadCudaAddon()
  console.log(JSON.stringify({ build: m.readCudaBuildStatus(), device: loaded.init ?? loaded.reason }, null, 2))
  if (!loaded.addon) process.exit(1)
"
step env TRIAD_REQUIRE_CUDA=1 node --import tsx --test --test-force-exit test/gpu/cuda-backend.test.ts
step env TRIAD_BACKEND=cuda TRIAD_CUDA_MIN_FLOPS=0 TRIAD_CUDA_MIN_FLOPS_PER_BYTE=0 \
  node --import tsx --test --test-force-exit test/gpu/transformer.test.ts test/gpu/hf-model.test.ts
step env TRIAD_BACKEND=cuda node --import tsx bin/triad.ts bench hf-model --backend cuda --quick
[ "$status" = 0 ] && echo "check:cuda: all passed" >&2 || echo "check:cuda: FAILED (see above)" >&2
exit "$status"
