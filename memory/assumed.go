package memory

import (
	"encoding/json"
	"fmt"
)

// KeySet is a set of job settings named by their JSON keys ([JobKeys]).
// [Result.Assumed] is one: the settings the job left empty and the
// estimate filled with a default. Its JSON form is the list of keys, in
// the order of the Job's fields.
type KeySet struct {
	bits [keySetWords]uint64
}

// keySetWords bounds the settings a KeySet holds: 64 per word (a test
// checks that every Job field fits).
const keySetWords = 3

// keyID is a setting's position among the Job's fields (JobKey.index).
type keyID uint8

// keyOf returns the position of the setting named name; it panics on a
// name that is not a Job key, which only a typo in this package can give
// (the positions below are set once, when the package loads).
func keyOf(name string) keyID {
	k, ok := LookupJobKey(name)
	if !ok || k.index >= 64*keySetWords {
		panic("memory: no job key " + name)
	}
	return keyID(k.index)
}

// The settings an estimate fills when the job leaves them empty.
var (
	keyDtype          = keyOf("dtype")
	keyMaster         = keyOf("master_weights")
	keyCompute        = keyOf("compute_dtype")
	keyOptimizer      = keyOf("optimizer")
	keyMicroBatch     = keyOf("per_device_batch")
	keyGradAccum      = keyOf("grad_accum")
	keySeqLen         = keyOf("seq_len")
	keyPacked         = keyOf("packed")
	keyAttention      = keyOf("attn")
	keyGradCkpt       = keyOf("grad_checkpoint")
	keyFusedLoss      = keyOf("fused_loss")
	keyFramework      = keyOf("framework")
	keyMethod         = keyOf("method")
	keyLoRARank       = keyOf("lora_rank")
	keyLoRATargets    = keyOf("lora_target_modules")
	keyFeedforward    = keyOf("feedforward_modules")
	keyAdapterDtype   = keyOf("adapter_dtype")
	keyQuantType      = keyOf("quant_type")
	keyDoubleQuant    = keyOf("double_quant")
	keyImages         = keyOf("images_per_sample")
	keyEngine         = keyOf("engine")
	keyFSDPStrategy   = keyOf("fsdp_strategy")
	keyNumGPUs        = keyOf("num_gpus")
	keyNodes          = keyOf("nodes")
	keyDP             = keyOf("dp")
	keyTP             = keyOf("tp")
	keyPP             = keyOf("pp")
	keyCP             = keyOf("cp")
	keyEP             = keyOf("ep")
	keyOffloadOpt     = keyOf("offload_optimizer")
	keyOffloadParams  = keyOf("offload_params")
	keySchedule       = keyOf("pipeline_schedule")
	keyDeviceMap      = keyOf("device_map")
	keyLowCPUMem      = keyOf("low_cpu_mem_usage")
	keyZeroInit       = keyOf("zero_init")
	keyCPURAMLoading  = keyOf("cpu_ram_efficient_loading")
	keySyncModule     = keyOf("sync_module_states")
	keyBatch          = keyOf("batch")
	keyPromptLen      = keyOf("prompt_len")
	keyKVDtype        = keyOf("kv_cache_dtype")
	keyMaxModelLen    = keyOf("max_model_len")
	keyGPUUtil        = keyOf("gpu_memory_utilization")
	keyMaxNumSeqs     = keyOf("max_num_seqs")
	keyMaxBatchTokens = keyOf("max_num_batched_tokens")
	keyBlockSize      = keyOf("block_size")
	keyInferEngine    = keyOf("inference_engine")
	keyDecideOn       = keyOf("decide_on")
)

// add puts the setting k in the set.
func (s *KeySet) add(k keyID) { s.bits[k/64] |= 1 << (k % 64) }

// has reports whether the setting k is in the set.
func (s *KeySet) has(k keyID) bool { return s.bits[k/64]&(1<<(k%64)) != 0 }

// Has reports whether the setting whose JSON key is name is in the set.
func (s KeySet) Has(name string) bool {
	k, ok := LookupJobKey(name)
	return ok && k.index < 64*keySetWords && s.has(keyID(k.index))
}

// Delete removes the setting whose JSON key is name from the set.
func (s *KeySet) Delete(name string) {
	if k, ok := LookupJobKey(name); ok && k.index < 64*keySetWords {
		s.bits[k.index/64] &^= 1 << (k.index % 64)
	}
}

// Equal reports whether s and t hold the same settings (go-cmp uses it).
func (s KeySet) Equal(t KeySet) bool { return s == t }

// IsZero reports whether the set is empty.
func (s KeySet) IsZero() bool { return s.bits == [keySetWords]uint64{} }

// Keys returns the JSON keys in the set, in the order of the Job's fields.
func (s KeySet) Keys() []string {
	var out []string
	for _, k := range JobKeys() {
		if k.index < 64*keySetWords && s.has(keyID(k.index)) {
			out = append(out, k.Name)
		}
	}
	return out
}

// MarshalJSON writes the set as a list of keys.
func (s KeySet) MarshalJSON() ([]byte, error) {
	keys := s.Keys()
	if keys == nil {
		keys = []string{}
	}
	return json.Marshal(keys)
}

// UnmarshalJSON reads a list of keys; an unknown key is an error.
func (s *KeySet) UnmarshalJSON(b []byte) error {
	var keys []string
	if err := json.Unmarshal(b, &keys); err != nil {
		return err
	}
	*s = KeySet{}
	for _, name := range keys {
		k, ok := LookupJobKey(name)
		if !ok || k.index >= 64*keySetWords {
			return fmt.Errorf("assumed: %q is not a job key", name)
		}
		s.add(keyID(k.index))
	}
	return nil
}
