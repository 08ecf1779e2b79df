package memory

import (
	"os"
	"strings"
	"testing"

	"github.com/gpumem/gpumem/model"
)

// miniMaxM1 parses MiniMax-M1's release config (not in the catalog: the
// 40k and 80k releases share it, see model/testdata/hybrid/PROVENANCE.md).
func miniMaxM1(t *testing.T) *model.Model {
	t.Helper()
	data, err := os.ReadFile("../model/testdata/hybrid/MiniMaxAI__MiniMax-M1.json")
	if err != nil {
		t.Fatal(err)
	}
	m, err := model.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestHybridKVAndState checks the KV cache and the recurrent state of
// three hybrid families in a transformers prefill against values worked
// out by hand from their modeling source. Only attention layers cache
// keys and values; each recurrent layer keeps, per sequence, the conv
// window (conv_dim × conv_kernel in the model dtype) and its state.
func TestHybridKVAndState(t *testing.T) {
	const prompt, batch = 8192, 4
	tests := []struct {
		name   string
		m      *model.Model
		kv     int64 // bytes per token over the attention layers
		state  int64 // bytes per sequence over the recurrent layers
		layers int   // attention layers, for the record
	}{
		// Qwen3.5-27B: 64 layers, every 4th full attention (16) with 4 KV
		// heads of 256: 2 × 4 × 256 × 2 B = 4096 B per token per layer.
		// 48 gated-DeltaNet layers: conv over q, k, v = 2·16·128 + 48·128 =
		// 10240 channels × kernel 4 × 2 B = 81,920 B; state 48 value heads ×
		// 128 × 128 in fp32 = 3,145,728 B.
		{"Qwen3.5-27B", mustLookupModel(t, "Qwen/Qwen3.5-27B"), 16 * 4096, 48 * (10240*4*2 + 48*128*128*4), 16},
		// Nemotron-3-Nano-30B-A3B: 6 attention layers ("*") with 2 KV heads
		// of 128: 1024 B per token per layer. 23 Mamba-2 layers ("M"): conv
		// over x, B, C = 64·64 + 2·8·128 = 6144 channels × 4 × 2 B = 49,152 B;
		// state 64 heads × 64 × 128 in the model dtype (bf16) = 1,048,576 B.
		{"Nemotron-3-Nano-30B-A3B", mustLookupModel(t, "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16"), 6 * 1024, 23 * (6144*4*2 + 64*64*128*2), 6},
		// MiniMax-M1: 10 softmax-attention layers with 8 KV heads of 128:
		// 4096 B per token per layer. 70 lightning layers: no conv; kv state
		// 64 heads × 128 × 128 built in fp32 = 4,194,304 B.
		{"MiniMax-M1", miniMaxM1(t), 10 * 4096, 70 * (64 * 128 * 128 * 4), 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			job := Job{Mode: Inference, PromptLen: prompt, Batch: batch, ImagesPerSample: 0, AllowLong: true}
			r := mustEstimate(t, tt.m, job)
			tokens := int64(prompt)
			if v := tt.m.Vision; v != nil {
				// A VLM's prompt carries one image by default: Qwen3.5's tower
				// at its 448-pixel reference size gives (448/16)² patches
				// merged 2×2 = 196 tokens.
				tokens += int64(v.TokensPerImage)
			}
			if got, want := int64(component(t, r, "kv_cache").Bytes), tt.kv*tokens*batch; got != want {
				t.Errorf("kv_cache = %d, want %d = %d B/token × %d tokens × batch %d", got, want, tt.kv, tokens, batch)
			}
			if got, want := int64(component(t, r, "recurrent_state").Bytes), tt.state*batch; got != want {
				t.Errorf("recurrent_state = %d, want %d = %d B × batch %d", got, want, tt.state, batch)
			}
			// The state does not grow with the sequence.
			job.PromptLen = prompt / 4
			r2 := mustEstimate(t, tt.m, job)
			if component(t, r2, "recurrent_state").Bytes != component(t, r, "recurrent_state").Bytes {
				t.Errorf("recurrent state changes with the prompt")
			}
		})
	}
}

// TestHybridServingPool checks vLLM's hybrid pool for Nemotron-3-Nano and
// Qwen3.5-27B against the arithmetic of vLLM's KV manager (see
// serving_hybrid.go).
func TestHybridServingPool(t *testing.T) {
	tests := []struct {
		name     string
		id       string
		perToken int64 // attention bytes per token per layer
		page     int64 // one layer's state page (conv (K−1) window + state)
		block    int   // aligned attention block
		group    int   // layers per group
		groups   int   // groups per request beyond the attention ones
		stateSeq int64 // state per sequence over all recurrent layers
	}{
		// Nemotron-3-Nano-30B-A3B: conv 6144 × 3 × 2 B = 36,864 + state
		// 64 × 64 × 128 × 4 B (mamba_ssm_cache_dtype float32) = 2,097,152:
		// page 2,134,016 B. block = 16 · ⌈2,134,016 / (16 · 1024)⌉ = 16 · 131
		// = 2096 tokens. 6 attention and 23 Mamba layers: groups of 6, one
		// attention group and ⌈23/6⌉ = 4 Mamba groups.
		{"Nemotron-3-Nano-30B-A3B", "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", 1024, 36864 + 2097152, 2096, 6, 4, 23 * (36864 + 2097152)},
		// Qwen3.5-27B: conv 10240 × 3 × 2 B = 61,440 + state 48 × 128 × 128 ×
		// 4 B (mamba_ssm_dtype float32) = 3,145,728: page 3,207,168 B. block =
		// 16 · ⌈3,207,168 / (16 · 4096)⌉ = 16 · 49 = 784 tokens. 16 attention
		// and 48 DeltaNet layers: groups of 16, one attention and 3 DeltaNet
		// groups.
		{"Qwen3.5-27B", "Qwen/Qwen3.5-27B", 4096, 61440 + 3145728, 784, 16, 3, 48 * (61440 + 3145728)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			const maxLen = 32768
			m := mustLookupModel(t, tt.id)
			r := mustEstimate(t, m, Job{Mode: Serving, GPUMemory: h100Total, MaxModelLen: maxLen, ImagesPerSample: 0})
			s := r.Serving
			if s.BlockSize != tt.block || s.RecurrentStateBytesPerSeq != tt.stateSeq || s.KVBytesPerToken%tt.perToken != 0 {
				t.Fatalf("block %d, state %d, per token %d; want %d, %d, a multiple of %d", s.BlockSize, s.RecurrentStateBytesPerSeq, s.KVBytesPerToken, tt.block, tt.stateSeq, tt.perToken)
			}
			page := int64(tt.block) * tt.perToken
			if page < tt.page {
				t.Fatalf("attention page %d below the state page %d", page, tt.page)
			}
			blocks := int64(s.KVPoolBytes) / (page * int64(tt.group))
			if s.KVBlocks != blocks {
				t.Errorf("blocks = %d, want pool %d / (page %d × group %d) = %d", s.KVBlocks, s.KVPoolBytes, page, tt.group, blocks)
			}
			perSeq := (maxLen+int64(tt.block)-1)/int64(tt.block) + int64(tt.groups)
			if want := blocks / perSeq; s.MaxConcurrentSeqs != want {
				t.Errorf("concurrency = %d, want %d blocks / (%d attention + %d state blocks) = %d", s.MaxConcurrentSeqs, blocks, perSeq-int64(tt.groups), tt.groups, want)
			}
			if want := blocks / int64(1+tt.groups) * int64(tt.block); s.KVTokens != want {
				t.Errorf("tokens = %d, want blocks/groups × block = %d", s.KVTokens, want)
			}
			if !s.MaxModelLenFits {
				t.Errorf("max_model_len %d does not fit", maxLen)
			}
		})
	}
}

// TestHybridStateInvariants checks what holds whatever the numbers: the
// hybrid KV cache is far below what caching every layer would take, more
// tensor parallelism never grows a GPU's state, and longer sequences never
// shrink the serving capacity's memory per sequence.
func TestHybridStateInvariants(t *testing.T) {
	for _, id := range []string{"Qwen/Qwen3.5-35B-A3B", "Qwen/Qwen3-Next-80B-A3B-Thinking", "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16"} {
		t.Run(id, func(t *testing.T) {
			m := mustLookupModel(t, id)
			job := Job{Mode: Inference, PromptLen: 32768, Batch: 1, AllowLong: true}
			r := mustEstimate(t, m, job)
			kv := component(t, r, "kv_cache").Bytes
			st := &m.Text
			all := int64(st.Layers) * 2 * int64(st.KVHeads*st.HeadDim) * 2 * 32768
			if int64(kv)*3 > all {
				t.Errorf("kv_cache %d is not a fraction of every layer's %d", kv, all)
			}
			job.TP = 2
			r2 := mustEstimate(t, m, job)
			if component(t, r2, "recurrent_state").Bytes > component(t, r, "recurrent_state").Bytes {
				t.Errorf("tp 2 grows the state")
			}
			var prev int64
			for _, n := range []int{4096, 16384, 65536} {
				s := mustEstimate(t, m, Job{Mode: Serving, GPUMemory: h100Total, MaxModelLen: 65536, SeqLen: n, ImagesPerSample: 0, AllowLong: true}).Serving
				if prev > 0 && s.MaxConcurrentSeqs > prev {
					t.Errorf("%d-token sequences: %d concurrent, more than %d for shorter ones", n, s.MaxConcurrentSeqs, prev)
				}
				prev = s.MaxConcurrentSeqs
			}
		})
	}
}

// mustLookupModel returns a catalog model.
func mustLookupModel(t *testing.T, id string) *model.Model {
	t.Helper()
	m, err := model.Lookup(id)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestHybridLayerActivations checks the saved activations of each layer
// kind of a hybrid stack in full bf16 training: a Mamba-2 layer saves
// what mamba_split_conv1d_scan_combined keeps (in_proj output
// 2·d_inner + 2·groups·d_state + heads, the scan output d_inner, an fp32
// rstd per group) and nothing for an MLP; an MLP-only block saves nothing
// for attention and has one norm; a DeltaNet layer keeps what fla's kernel
// and the layer around it keep.
func TestHybridLayerActivations(t *testing.T) {
	r := &actRegime{c: 2, resid: 2, trainW: true, attn: trAttnFlash}
	nano := mustLookupModel(t, "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16")
	st := &nano.Text
	kinds := map[string]model.LayerType{}
	for _, lt := range st.LayerTypes {
		switch {
		case lt.State != "":
			kinds["mamba"] = lt
		case lt.MoE:
			kinds["moe"] = lt
		case lt.Attention == model.FullAttention:
			kinds["attention"] = lt
		}
	}
	var mamba, moe, attn layerSplit
	fillSplit(st, kinds["mamba"], r, &mamba)
	fillSplit(st, kinds["moe"], r, &moe)
	fillSplit(st, kinds["attention"], r, &attn)
	// d_inner 64·64 = 4096, groups 8 × d_state 128, 64 heads.
	if want := 2*(2*4096+2*8*128+64) + 2*4096 + 4*8.0; mamba.attn.lin != want || mamba.mlp != 0 || mamba.mlpNorm != 0 {
		t.Errorf("mamba layer: mixer %g (want %g), mlp %g, mlp norm %g (want 0)", mamba.attn.lin, want, mamba.mlp, mamba.mlpNorm)
	}
	if moe.attn != (layerAct{}) || moe.attnNorm != 0 || moe.mlp == 0 || moe.mlpNorm == 0 {
		t.Errorf("MoE block: %+v; want only its MLP and norm", moe)
	}
	if attn.mlp != 0 || attn.mlpNorm != 0 || attn.attn.lin == 0 {
		t.Errorf("attention block: %+v; want only attention and its norm", attn)
	}

	qwen := mustLookupModel(t, "Qwen/Qwen3.5-27B")
	var gdn layerSplit
	for _, lt := range qwen.Text.LayerTypes {
		if lt.State != "" {
			fillSplit(&qwen.Text, lt, r, &gdn)
			break
		}
	}
	// conv 10240, q and k repeated to 48 heads × 128, v 48·128, beta 48,
	// A 48·64, gated-norm input and gate and out_proj input 3·48·128, all
	// bf16; g, q_rstd, k_rstd and softplus input 4·48 in fp32.
	if want := 2*(10240+2*48*128+48*128+48+48*64+3*48*128) + 4*4*48.0; gdn.attn.lin != want || gdn.mlp == 0 {
		t.Errorf("DeltaNet layer: mixer %g, want %g; mlp %g", gdn.attn.lin, want, gdn.mlp)
	}

	if _, err := Estimate(miniMaxM1(t), Job{SeqLen: 1024}); err == nil {
		t.Error("training MiniMax-M1 estimated; its lightning attention has no training path")
	}
	res := mustEstimate(t, nano, Job{SeqLen: 2048, Method: "lora", LoRARank: 16})
	found := false
	for _, w := range res.Warnings {
		found = found || strings.Contains(w, "adapter activations are counted alike")
	}
	if !found {
		t.Errorf("LoRA on a hybrid: warnings %q lack the stated assumption", res.Warnings)
	}
}
