# mk/bench-model.mk — the speed room's build settings and targets (issue 4: speed and memory).
# Included by the top Makefile; uses $(BUILD), $(LIB), $(LDLIBS).
#
# Threads: the layers' loops use OpenMP (the same runtime oneDNN uses, so one pool serves both).
# oneDNN: when Debian's libdnnl-dev is installed, convolutions run through it (common/conv2d_dnnl.c,
# HVDLAB_DNNL); HVDLAB_CONV=gemm at run time selects the im2col + OpenBLAS reference path.

CFLAGS += -fopenmp
LDFLAGS += -fopenmp
DNNL_HEADER := $(wildcard /usr/include/oneapi/dnnl/dnnl.h)
ifneq ($(DNNL_HEADER),)
CPPFLAGS += -DHVDLAB_DNNL=1
LDLIBS += -ldnnl
endif

.PHONY: bench-conv bench-train

bench-train: $(BUILD)/bench/train_speed  ## WRN training images/s, GFLOP/s, peak memory: kit vs PyTorch, 1 and 2 threads (~5 min)
	@sh tools/setup.sh python3-torch
	$(BUILD)/bench/train_speed

bench-conv: $(BUILD)/bench/conv_micro  ## conv shapes of wrn-16-1/4: im2col+sgemm vs oneDNN, 1 and 2 threads
	$(BUILD)/bench/conv_micro --model 16-1,16-4 --threads 1,2

# The layers' elementwise loops: -O3 vectorises them fully (as ring.o's reduction loops).
$(BUILD)/common/bn.o $(BUILD)/common/act.o $(BUILD)/common/pool.o: CFLAGS += -O3
