# mk/bench-model.mk — the speed room's targets: training speed and memory vs PyTorch (issue 4).
# Included by the top Makefile; uses $(BUILD), $(LIB), $(LDLIBS).

.PHONY: bench-conv

# Convolution micro-benchmark: OpenBLAS im2col+sgemm vs oneDNN on the WRN conv shapes.
$(BUILD)/bench/conv_micro.o: CFLAGS += -fopenmp
$(BUILD)/bench/conv_micro: LDFLAGS += -fopenmp
$(BUILD)/bench/conv_micro: LDLIBS += -ldnnl

bench-conv: $(BUILD)/bench/conv_micro  ## conv shapes of wrn-16-1/4: im2col+sgemm vs oneDNN, 1 and 2 threads
	$(BUILD)/bench/conv_micro --model 16-1,16-4 --threads 1,2
