# mk/bn_clones.mk — test_bn_clones: common/nn/bn.c built once per target of its target_clones
# (x86-64-v4, AVX2, the baseline), its public names suffixed _v4, _avx2, _base, all three
# linked into one unit test that compares them bit for bit (tests/unit/test_bn_clones.c).
BN_CLONE_OBJ := $(foreach t,v4 avx2 base,$(BUILD)/tests/bn_clone/bn_$(t).o)
BN_TARGET_v4 := __attribute__((target("arch=x86-64-v4")))
BN_TARGET_avx2 := __attribute__((target("avx2")))
BN_TARGET_base :=
BN_PUBLIC := bn_forward_train bn_forward_infer bn_backward bn_relu_forward_train \
             bn_relu_forward_infer bn_relu_backward

$(BN_CLONE_OBJ): $(BUILD)/tests/bn_clone/bn_%.o: common/nn/bn.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) -O3 '-DHOT=$(BN_TARGET_$*)' $(foreach f,$(BN_PUBLIC),-D$(f)=$(f)_$*) \
	  -c $< -o $@

$(BUILD)/tests/unit/test_bn_clones: $(BN_CLONE_OBJ)
$(BUILD)/tests/unit/test_bn_clones: LDFLAGS += $(BN_CLONE_OBJ)
