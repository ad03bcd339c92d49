# mk/bench.mk — the benchmarks under bench/: each prints its figures beside a peer measured in
# the same run. Included by the Makefile; uses $(BUILD), $(LIB), $(MPIRUN), $(MPIRUN_FLAGS).

.PHONY: bench-allreduce bench-epoch bench-train bench-conv bench-loader bench-tta

# One host: hvd_allreduce (its default path: the shared window) vs MPI_Allreduce vs the ring
# alone, 2 and 4 ranks, the kit's huge-page buffers and plain malloc ones. Then 2 namespace hosts
# of 2 ranks: the hierarchical path vs the flat ring, with the link unlimited, 10 and 1 Gbit/s.
ALLREDUCE_FLAGS ?= --min-bytes 64K --max-bytes 256M
bench-allreduce: $(BUILD)/bench/allreduce  ## hvd_allreduce vs MPI_Allreduce vs the ring, 64 KiB..256 MiB, 2 and 4 ranks; hierarchical vs flat across 2 hosts
	$(MPIRUN) $(MPIRUN_FLAGS) -n 2 $(BUILD)/bench/allreduce $(ALLREDUCE_FLAGS)
	$(MPIRUN) $(MPIRUN_FLAGS) -n 2 $(BUILD)/bench/allreduce $(ALLREDUCE_FLAGS) --plain-malloc
	$(MPIRUN) $(MPIRUN_FLAGS) -n 4 $(BUILD)/bench/allreduce $(ALLREDUCE_FLAGS)
	$(MPIRUN) $(MPIRUN_FLAGS) -n 4 $(BUILD)/bench/allreduce $(ALLREDUCE_FLAGS) --plain-malloc
	sh bench/allreduce_hosts.sh $(BUILD)

bench-epoch: $(BUILD)/bench/train  ## one epoch of real Fashion-MNIST on 2 ranks, time split into compute and allreduce
	$(MPIRUN) $(MPIRUN_FLAGS) -n 2 $(BUILD)/bench/train --train-subset 0 $(EPOCH_FLAGS)

bench-train: $(BUILD)/bench/train_speed  ## WRN training images/s, GFLOP/s, peak memory: kit vs PyTorch, 1 and 2 threads (~5 min)
	@sh tools/setup.sh python3-torch
	$(BUILD)/bench/train_speed

# Time to accuracy: the kit and PyTorch DDP (bench/peer_ddp.py), the same recipe, seed by seed.
TTA_SEEDS ?= 1 2 3
TTA_EPOCHS ?= 3
TTA_FLAGS ?= --warmup-epochs 1
bench-tta:  ## time to val_accuracy 0.85: kit vs PyTorch DDP, 2 ranks x 1 thread, full data, per-epoch accuracy over seeds (~25 min)
	@sh tools/setup.sh python3-torch
	@$(MAKE) --no-print-directory solution10
	MPIRUN="$(MPIRUN) $(MPIRUN_FLAGS)" sh tools/tta.sh "$(TTA_SEEDS)" $(TTA_EPOCHS) 2 -- $(TTA_FLAGS)

bench-conv: $(BUILD)/bench/conv_micro  ## conv shapes of wrn-16-1/4: im2col+sgemm vs oneDNN, 1 and 2 threads
	$(BUILD)/bench/conv_micro --model 16-1,16-4 --threads 1,2

bench-loader: $(BUILD)/bench/loader  ## data pipeline images/s (batch 128, one core) and IDX decode time
	$(BUILD)/bench/loader

.PHONY: test-bench-tools
test-bench-tools:  ## the GPU benches' verdict scripts (and gpu-memcheck's) on rows of their programs' formats, tools/gpu_session.sh's stages and limits (no GPU needed)
	@sh tests/bench/allreduce_gpu_compare.sh
	@sh tests/bench/allreduce_gpu_ways.sh
	@sh tests/bench/bench_train_gpu_rows.sh
	@sh tests/bench/bench_train_gpu_mixed_rows.sh
	@sh tests/bench/bench_train_gpu_nsys.sh
	@sh tests/bench/gpu_memcheck_lines.sh
	@sh tests/bench/gpu_session_stages.sh
	@sh tests/bench/stage_timeout.sh
	@sh tests/bench/study_args.sh

# Device buffers: the CUDA flavour's build, whatever this make's flavour is. The peer: PyTorch's
# gloo allreduce of CUDA tensors, 2 ranks on the GPU (NCCL refuses that, in PyTorch too);
# tools/allreduce_gpu_compare.awk joins the three runs and checks issue 13's targets. The staged
# path runs five times, each followed by its verdict, the default first so that a run cut short
# (gpu-check's stage limit) keeps the verdicts it reached (and the later ways run even when the
# default gave no rows; the target still fails then):
#   as it runs by default (HVDLAB_STAGED_REDUCE auto: groups from 2 MiB summed on the GPUs,
#     from 8 MiB through CUDA IPC, smaller ones by the CPU);
#   every group summed on the GPUs through a window in GPU memory shared by CUDA IPC
#     (HVDLAB_STAGED_REDUCE=ipc, ipc_window.h): no piece passes through the host, so its figures
#     may pass the copy ceiling, which bounds only the ways through the host;
#   every group summed by the CPU from a pinned buffer of cudaMallocHost
#     (HVDLAB_STAGED_REDUCE=host);
#   every group summed on the GPUs through a pinned shared window (HVDLAB_STAGED_REDUCE=gpu,
#     staged_node.h);
#   summed by the CPU from huge pages registered with CUDA (HVDLAB_STAGED_HOST=hugepages, which
#     lets the host take its single-copy path).
# Each 2-rank run also times the copies with both ranks copying at once: the ceiling two ranks
# sharing one GPU can have. Last, tools/allreduce_gpu_ways.awk sets the five side by side, the
# fastest per size, and says of each opt-in whether it is faster than the default at every size.
.PHONY: bench-allreduce-gpu
bench-allreduce-gpu:  ## device buffers 64K..256M: NCCL 1 rank, host-staged 2 ranks on one GPU (5 ways), copy ceilings, PyTorch gloo peer (needs a GPU)
	$(MAKE) --no-print-directory CUDA=1 BUILD=build/cuda build/cuda/bench/allreduce_gpu
	$(MPIRUN) $(MPIRUN_FLAGS) -n 1 build/cuda/bench/allreduce_gpu | tee build/cuda/ar_gpu.n1
	$(MPIRUN) $(MPIRUN_FLAGS) -n 2 build/cuda/bench/allreduce_gpu | tee build/cuda/ar_gpu.n2
	python3 bench/peer_gloo_allreduce.py --np 2 --device cuda | tee build/cuda/ar_gpu.gloo
	-awk -f tools/allreduce_gpu_compare.awk build/cuda/ar_gpu.n1 build/cuda/ar_gpu.n2 build/cuda/ar_gpu.gloo
	HVDLAB_STAGED_REDUCE=ipc $(MPIRUN) $(MPIRUN_FLAGS) -x HVDLAB_STAGED_REDUCE -n 2 \
	  build/cuda/bench/allreduce_gpu | tee build/cuda/ar_gpu.n2i
	-awk -f tools/allreduce_gpu_compare.awk build/cuda/ar_gpu.n1 build/cuda/ar_gpu.n2i build/cuda/ar_gpu.gloo | \
	  sed 's/^bench-allreduce-gpu: staged/bench-allreduce-gpu: staged, summed on the GPUs through CUDA IPC (HVDLAB_STAGED_REDUCE=ipc)/'
	HVDLAB_STAGED_REDUCE=host $(MPIRUN) $(MPIRUN_FLAGS) -x HVDLAB_STAGED_REDUCE -n 2 \
	  build/cuda/bench/allreduce_gpu | tee build/cuda/ar_gpu.n2c
	awk -f tools/allreduce_gpu_compare.awk build/cuda/ar_gpu.n1 build/cuda/ar_gpu.n2c build/cuda/ar_gpu.gloo | \
	  sed 's/^bench-allreduce-gpu: staged/bench-allreduce-gpu: staged, summed by the CPU (HVDLAB_STAGED_REDUCE=host)/'
	HVDLAB_STAGED_REDUCE=gpu $(MPIRUN) $(MPIRUN_FLAGS) -x HVDLAB_STAGED_REDUCE -n 2 \
	  build/cuda/bench/allreduce_gpu | tee build/cuda/ar_gpu.n2g
	awk -f tools/allreduce_gpu_compare.awk build/cuda/ar_gpu.n1 build/cuda/ar_gpu.n2g build/cuda/ar_gpu.gloo | \
	  sed 's/^bench-allreduce-gpu: staged/bench-allreduce-gpu: staged, summed on the GPUs (HVDLAB_STAGED_REDUCE=gpu)/'
	HVDLAB_STAGED_REDUCE=host HVDLAB_STAGED_HOST=hugepages $(MPIRUN) $(MPIRUN_FLAGS) \
	  -x HVDLAB_STAGED_REDUCE -x HVDLAB_STAGED_HOST -n 2 build/cuda/bench/allreduce_gpu | tee build/cuda/ar_gpu.n2h
	awk -f tools/allreduce_gpu_compare.awk build/cuda/ar_gpu.n1 build/cuda/ar_gpu.n2h build/cuda/ar_gpu.gloo | \
	  sed 's/^bench-allreduce-gpu: staged/bench-allreduce-gpu: staged on huge pages, summed by the CPU (HVDLAB_STAGED_REDUCE=host HVDLAB_STAGED_HOST=hugepages)/'
	@# the five ways side by side, and each opt-in against the default at every size
	-awk -v ways="auto ipc host gpu hugepages" -f tools/allreduce_gpu_ways.awk build/cuda/ar_gpu.n2 \
	  build/cuda/ar_gpu.n2i build/cuda/ar_gpu.n2c build/cuda/ar_gpu.n2g build/cuda/ar_gpu.n2h
	@# the target fails when the default way gave no rows (its verdict said so above)
	@awk -f tools/allreduce_gpu_compare.awk build/cuda/ar_gpu.n1 build/cuda/ar_gpu.n2 build/cuda/ar_gpu.gloo >/dev/null
