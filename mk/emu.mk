# mk/emu.mk — the CUDA build of the runtime with its GPU kernels run on the CPU by the emulator in
# tests/emu/ (README there), for a machine without a GPU:
#   make test-emu (part of make test, ~40 s): test_twins_emu, test_twins_cuda.c's cases of the
#     kit's kernels (bn, act, pool, xent) against the CPU layers (HVDLAB_CUDA_EMU leaves out the
#     cuDNN and cuBLAS cases);
#   make test-emu-model (~10 min, apart for its time): test_wrn_emu, test_wrn_cuda.c, the whole
#     GPU model against the CPU model, where the GPU model's convolutions and dense layers are
#     the CPU's own (tests/emu/emu_libs.c); by default (NHWC, the bias folded into batch norm),
#     with HVDLAB_BIAS_IN_BN=0, and in NCHW (HVDLAB_ACTIVATION_LAYOUT=nchw) with
#     HVDLAB_BN_BATCH=1 and with HVDLAB_BIAS_IN_BN=0 (tests/emu/run_emu.sh);
#   make test-emu-coll (part of make test, ~150 s): test_gpu_collectives.c and prog_gpu_coll.c as
#     the GPU build runs them, under mpirun: NCCL of one rank (tests/emu/emu_nccl.c), the
#     host-staged paths with 2 and 3 ranks on the one emulated GPU;
#   make test-emu-train (part of make test, ~45 s): solution 10 trained by 2 ranks sharing the
#     emulated GPU for 4 steps, three ways, and by one rank on it and one on the CPU, against
#     the CPU build (tests/emu/run_sol10.sh).
# In every suite host code that touches device memory stops (tests/emu/emu_memory.c), and work
# on a stream runs only when the host waits for it (tests/emu/emu_stream.c). They check the
# kernels' arithmetic and indexing and the GPU path's wiring before a run on a GPU, not speed or
# races inside a kernel. Need the CUDA toolkit's headers (types only: nothing of CUDA runs);
# skipped without them.
EMU := $(BUILD)/emu
# Files of the CUDA build that the emulator replaces: NVIDIA's libraries and the device context.
EMU_REPLACED := common/nn/conv2d_cudnn.cu common/nn/dense_cuda.cu common/nn/gpu_context.cu
EMU_CU_OBJ := $(patsubst %.cu,$(EMU)/%.o,$(filter-out $(EMU_REPLACED),$(wildcard common/*/*.cu)))
EMU_C_OBJ := $(COMMON_SRC:%.c=$(EMU)/%.o) $(patsubst %.c,$(EMU)/%.o,$(wildcard tests/emu/*.c))
EMU_LIB := $(EMU)/libhvdlab_emu.a
EMU_TESTS := $(EMU)/test_twins_emu $(EMU)/test_wrn_emu
# test_gpu_collectives runs prog_gpu_coll at ../progs/ from itself, as in build/cuda/tests/.
EMU_COLL := $(EMU)/tests/unit/test_gpu_collectives $(EMU)/tests/progs/prog_gpu_coll
# Solution 10 on the emulated GPU (tests/emu/run_sol10.sh).
EMU_SOL := $(EMU)/solutions/step10
EMU_TEST_HELPERS := $(patsubst %.c,$(EMU)/%.o,$(wildcard tests/lib/*.c))
EMU_CPPFLAGS = -DHVDLAB_CUDA=1 -DHVDLAB_CUDA_EMU=1 -Itests -Itests/emu -I$(CUDA_HOME)/include \
               -I$(CUDNN_HOME)/include -I$(NCCL_HOME)/include
# The kernels as C++: no FMA contraction, as nvcc --fmad=false; `#pragma unroll` is nvcc's.
EMU_CXXFLAGS = -std=c++17 $(OPT) -g -Wall -Wextra $(if $(filter 1,$(WERROR)),-Werror) \
               -Wno-unknown-pragmas -ffp-contract=off -MMD -MP \
               $(if $(filter 1,$(SANITIZE)),-fsanitize=address$(comma)undefined -fno-omit-frame-pointer)

EMU_HEADERS_FOUND = $(and $(wildcard $(CUDA_HOME)/include/cuda_runtime_api.h),$(wildcard \
                      $(CUDNN_HOME)/include/cudnn.h),$(wildcard $(NCCL_HOME)/include/nccl.h))
# $(call emu_run,binary,command): builds the emulated binary, then runs command; in a CUDA=1
# make it stops (that build has the real kernels), and without the headers it says it skipped.
emu_run = $(if $(filter 1,$(CUDA)),\
  echo "$@: a CPU-flavour target (a CUDA=1 build has the real kernels)" >&2; exit 2,\
  $(if $(EMU_HEADERS_FOUND),$(MAKE) --no-print-directory $(1) >/dev/null && $(2),\
    echo "$@: skipped, no CUDA, cuDNN or NCCL headers (CUDA_HOME=$(CUDA_HOME))"))

.PHONY: test-emu test-emu-model test-emu-coll test-emu-train
test-emu:  ## the GPU kernels of bn, act, pool and xent emulated on the CPU against the CPU layers (no GPU needed)
	@$(call emu_run,$(EMU)/test_twins_emu,$(TIMEOUT) 600 $(EMU)/test_twins_emu)

test-emu-model:  ## the whole GPU model emulated on the CPU against the CPU model, four ways (~10 min; no GPU needed)
	@$(call emu_run,$(EMU)/test_wrn_emu,TEST_TIMEOUT=900 sh tests/emu/run_emu.sh $(EMU)/test_wrn_emu)

test-emu-coll:  ## the collectives on emulated device buffers (NCCL of one rank; staged, 2 and 3 ranks) against the CPU runtime (~150 s; no GPU needed)
	@$(call emu_run,$(EMU_COLL),echo "$(EMU_COLL_SAYS)" && \
	  MPIRUN="$(MPIRUN) $(MPIRUN_FLAGS)" $(TIMEOUT) 900 $(EMU)/tests/unit/test_gpu_collectives)

test-emu-train:  ## solution 10, 2 ranks sharing the emulated GPU, a few steps: ranks agree at every step, losses the CPU build's (~45 s; no GPU needed)
	@$(call emu_run,$(EMU_SOL) $(BUILD)/solutions/step10,MPIRUN="$(MPIRUN) $(MPIRUN_FLAGS)" \
	  sh tests/emu/run_sol10.sh $(EMU_SOL) $(BUILD)/solutions/step10)

EMU_COLL_SAYS := test_gpu_collectives (emulated): the collectives on device buffers$(comma) the GPU \
  emulated on the CPU (tests/emu; device memory closed to host code$(comma) streams run late): \
  their paths and bits$(comma) not a GPU result

$(EMU)/%.cu: %.cu tests/emu/emu_cu.sh
	@mkdir -p $(@D)
	sh tests/emu/emu_cu.sh $< $@

$(EMU_CU_OBJ): %.o: %.cu tests/emu/cuda_emu.cuh $(FLAGS_STAMP)
	g++ -x c++ $(EMU_CXXFLAGS) -D_GNU_SOURCE -Icommon $(EMU_CPPFLAGS) -include cuda_emu.cuh \
	  -c $< -o $@

$(EMU_C_OBJ) $(EMU_TESTS:%=%.o) $(EMU_COLL:%=%.o) $(EMU_SOL:%=%.o): $(FLAGS_STAMP)
$(EMU)/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(EMU_CPPFLAGS) $(CFLAGS) -c $< -o $@

$(EMU_LIB): $(EMU_C_OBJ) $(EMU_CU_OBJ)
	rm -f $@ && ar rcs $@ $^

$(EMU)/test_%_emu.o: tests/unit/test_%_cuda.c $(FLAGS_STAMP)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(EMU_CPPFLAGS) $(CFLAGS) -c $< -o $@

$(EMU_TESTS) $(EMU_COLL) $(EMU_SOL): %: %.o $(EMU_LIB) $(EMU_TEST_HELPERS)
	$(CC) $(LDFLAGS) -rdynamic $< $(EMU_TEST_HELPERS) $(EMU_LIB) $(CHECK_LIBS) $(LDLIBS) \
	  -lstdc++ -o $@
