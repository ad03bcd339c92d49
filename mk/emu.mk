# mk/emu.mk — make test-emu: the GPU twins' kernels (bn, act, pool, xent) run on the CPU by the
# emulator in tests/emu/ (README there), against the CPU layers, in test_twins_cuda.c's cases
# without cuDNN and cuBLAS (HVDLAB_CUDA_EMU). For a machine without a GPU: a kernel's arithmetic
# and indexing are checked before a GPU session, not its speed or its races. Needs the CUDA
# toolkit's headers (types only: nothing of CUDA runs); skipped without them.
EMU := $(BUILD)/emu
EMU_KERNELS := bn act pool xent
EMU_KERNEL_OBJ := $(EMU_KERNELS:%=$(EMU)/common/nn/%_cuda.o)
EMU_OBJ := $(EMU_KERNEL_OBJ) $(EMU)/tests/emu/emu_sched.o $(EMU)/tests/emu/emu_runtime.o \
           $(EMU)/tests/unit/test_twins_cuda.o
EMU_CPPFLAGS = -DHVDLAB_CUDA=1 -DHVDLAB_CUDA_EMU=1 -Itests -Itests/emu -I$(CUDA_HOME)/include \
               -I$(CUDNN_HOME)/include
# The kernels as C++: no FMA contraction, as nvcc --fmad=false; `#pragma unroll` is nvcc's.
EMU_CXXFLAGS = -std=c++17 $(OPT) -g -Wall -Wextra $(if $(filter 1,$(WERROR)),-Werror) \
               -Wno-unknown-pragmas -ffp-contract=off -MMD -MP \
               $(if $(filter 1,$(SANITIZE)),-fsanitize=address$(comma)undefined -fno-omit-frame-pointer)

.PHONY: test-emu
test-emu:  ## the GPU kernels of bn, act, pool and xent emulated on the CPU against the CPU layers (no GPU needed)
ifeq ($(CUDA),1)
	@echo "test-emu: a CPU-flavour target (the CUDA=1 build has the real kernels): run make test-emu" >&2; exit 2
else
	@if [ -f "$(CUDA_HOME)/include/cuda_runtime_api.h" ] && [ -f "$(CUDNN_HOME)/include/cudnn.h" ]; then \
	  $(MAKE) --no-print-directory $(EMU)/test_twins_emu >/dev/null && \
	  timeout 600 $(EMU)/test_twins_emu; \
	else echo "test-emu: skipped, no CUDA headers at $(CUDA_HOME)/include (or no cudnn.h)"; fi
endif

$(EMU)/common/nn/%_cuda.cu: common/nn/%_cuda.cu tests/emu/emu_cu.sh
	@mkdir -p $(@D)
	sh tests/emu/emu_cu.sh $< $@

$(EMU_KERNEL_OBJ): %.o: %.cu tests/emu/cuda_emu.cuh $(FLAGS_STAMP)
	g++ -x c++ $(EMU_CXXFLAGS) -D_GNU_SOURCE -Icommon $(EMU_CPPFLAGS) -include cuda_emu.cuh \
	  -c $< -o $@

$(EMU)/tests/%.o: tests/%.c $(FLAGS_STAMP)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(EMU_CPPFLAGS) $(CFLAGS) -c $< -o $@

$(EMU)/test_twins_emu: $(EMU_OBJ) $(TEST_HELPERS) $(LIB)
	$(CC) $(LDFLAGS) $(EMU_OBJ) $(TEST_HELPERS) $(LIB) $(CHECK_LIBS) $(LDLIBS) -lstdc++ -o $@
