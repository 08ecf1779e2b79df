package memory

import (
	"math"
	"strings"
	"testing"
)

// qloraFSDP is Llama-2-7B QLoRA (NF4, double quantization) over two
// FSDP ranks, as TRL and the HF Trainer run it.
func qloraFSDP() Job {
	return Job{Method: MethodQLoRA, QuantType: "nf4", LoRARank: 16, LoRATargets: []string{"q_proj", "k_proj", "v_proj", "o_proj"},
		Engine: "fsdp", NumGPUs: 2, SeqLen: 4096, MicroBatch: 2, GradCheckpoint: "full", Attention: "flash", QuantStorage: "bf16"}
}

// TestShardedQLoRAWeights builds the per-rank weight bytes of sharded
// QLoRA from bitsandbytes' storage arithmetic: each 4-bit Linear's packed
// data (⌈n/2⌉ bytes, quantize_4bit with quant_storage) is sharded over
// the ranks, its QuantState (one uint8 absmax per 64 values, one fp32
// nested absmax per 256 blocks) stays whole on every rank, and the
// parameters bitsandbytes leaves alone stay in the model dtype, sharded:
// TRL skips prepare_model_for_kbit_training for sharded 4-bit weights.
func TestShardedQLoRAWeights(t *testing.T) {
	m := catalogModel(t, "meta-llama/Llama-2-7b-hf")
	const nd = 2.0
	var data, consts, rest float64
	for _, mod := range m.Modules {
		if mod.In > 0 && mod.Out > 0 && mod.Component != compLMHead {
			n := int64(mod.In) * int64(mod.Out)
			blocks := (n + 63) / 64
			data += float64(mod.Instances) * float64((n+1)/2)
			consts += float64(mod.Instances) * float64(blocks+4*((blocks+255)/256))
			rest += float64(mod.Instances) * float64(mod.Each-n) * 2
			continue
		}
		rest += float64(mod.Params) * 2
	}
	want := (data+rest)/nd + consts
	r := estimateOK(t, m, qloraFSDP())
	if got := float64(part(r, "weights")); math.Abs(got-want) > 1 {
		t.Errorf("weights %.0f B per rank, want packed data / 2 + bf16 rest / 2 + constants whole = %.0f B", got, want)
	}
	// The constants are 1/64 of a byte per weight plus the nested
	// absmax: about 0.1 GiB on Llama-2-7B, counted on each rank.
	if consts < 0.09*(1<<30) || consts > 0.11*(1<<30) {
		t.Errorf("constants %.3f GiB, want about 0.1 GiB", consts/(1<<30))
	}
	// Offloading the parameters moves the flat parameters to the host;
	// the QuantState stays on the GPU.
	off := qloraFSDP()
	off.OffloadParams, off.OffloadOptimizer = "cpu", "cpu"
	ro := estimateOK(t, m, off)
	if got := float64(part(ro, "weights")); math.Abs(got-consts) > 1 {
		t.Errorf("offloaded: weights %.0f B on the GPU, want the constants %.0f B", got, consts)
	}
	checkParts(t, r)
	checkParts(t, ro)
}

// TestShardedQLoRADtypes: sharded QLoRA keeps the residual stream, the
// unquantized parameters and (TRL 0.9.3 on) the adapters in the model
// dtype, where one GPU's QLoRA is prepared by
// prepare_model_for_kbit_training (fp32 rest, fp32 residual, fp32
// adapters); TRL before 0.8.0 prepared sharded models too, and before
// 0.9.3 upcast their adapters.
func TestShardedQLoRADtypes(t *testing.T) {
	m := catalogModel(t, "meta-llama/Llama-2-7b-hf")
	h := float64(m.Text.Hidden)
	tests := []struct {
		name     string
		job      func() Job
		adapter  string
		residual float64
	}{
		{"fsdp", qloraFSDP, "bf16", 2},
		{"zero3", func() Job {
			j := qloraFSDP()
			j.Engine, j.ZeRO = "deepspeed", 3
			return j
		}, "bf16", 2},
		{"adapter dtype stated", func() Job {
			j := qloraFSDP()
			j.AdapterDtype = "fp32"
			return j
		}, "fp32", 2},
		{"trl before 0.9.3", func() Job {
			j := qloraFSDP()
			j.Stack = Stack{"trl": "0.9.2"}
			return j
		}, "fp32", 2},
		{"trl before 0.8.0 under zero3", func() Job {
			j := qloraFSDP()
			j.Engine, j.ZeRO, j.Stack = "deepspeed", 3, Stack{"trl": "0.7.11"}
			return j
		}, "fp32", 4},
		{"one gpu", func() Job {
			j := qloraFSDP()
			j.Engine, j.NumGPUs, j.QuantStorage = "", 1, ""
			return j
		}, "fp32", 4},
		{"zero2 does not shard weights", func() Job {
			j := qloraFSDP()
			j.Engine, j.ZeRO, j.QuantStorage = "deepspeed", 2, ""
			return j
		}, "fp32", 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s setup
			if err := s.init(m, tt.job()); err != nil {
				t.Fatal(err)
			}
			if s.adapter.Name != tt.adapter || s.residual != tt.residual {
				t.Errorf("adapters %s, residual %v B, want %s and %v B", s.adapter.Name, s.residual, tt.adapter, tt.residual)
			}
			a := s.activations()
			if want := tt.residual * h * s.tokens; a.ckpt != want {
				t.Errorf("layer checkpoint %.0f B, want residual %v B × h × tokens = %.0f B", a.ckpt, tt.residual, want)
			}
		})
	}
}

// TestShardedQLoRAGather: FSDP all-gathers a decoder layer's 4-bit
// weights still packed (the flat parameter holds the quant_storage
// data), so the gathered unit of a sharded QLoRA job is its packed bytes
// plus its bf16 norms, not two bytes per parameter; the reported unit
// stays a parameter count.
func TestShardedQLoRAGather(t *testing.T) {
	m := catalogModel(t, "meta-llama/Llama-2-7b-hf")
	var s setup
	if err := s.init(m, qloraFSDP()); err != nil {
		t.Fatal(err)
	}
	var packed, params float64
	for _, mod := range m.Modules {
		if mod.Stack != stackText || mod.Layer < 0 {
			continue
		}
		params += float64(mod.Params)
		if mod.In > 0 && mod.Out > 0 {
			n := int64(mod.In) * int64(mod.Out)
			packed += float64(mod.Instances) * (float64((n+1)/2) + 2*float64(mod.Each-n))
			continue
		}
		packed += 2 * float64(mod.Params)
	}
	L := float64(m.Text.Layers)
	unit, _ := s.fsdpUnits(true)
	if got, want := unit*2, packed/L; math.Abs(got-want) > 1 {
		t.Errorf("gathered unit %.0f B, want the layer's packed bytes %.0f B", got, want)
	}
	if p, _ := s.fsdpUnits(false); math.Abs(p-params/L) > 1 {
		t.Errorf("unit %.0f params, want %.0f", p, params/L)
	}
	r := estimateOK(t, m, qloraFSDP())
	if r.Parallel.LargestUnitParams < int64(params/L) {
		t.Errorf("largest unit %d params, want at least a layer's %.0f", r.Parallel.LargestUnitParams, params/L)
	}
	// ZeRO-3 gathers the same packed storage module by module.
	z := qloraFSDP()
	z.Engine, z.ZeRO = "deepspeed", 3
	var sz setup
	if err := sz.init(m, z); err != nil {
		t.Fatal(err)
	}
	f, h := float64(m.Text.Intermediate), float64(m.Text.Hidden)
	checked := 0
	for i := range m.Modules {
		mod := &m.Modules[i]
		var want float64
		switch {
		case mod.Short == "down_proj" || strings.HasSuffix(mod.Name, "down_proj"):
			want = f * h / 2 / 2 // packed bytes in bf16 elements
		case mod.Component == compEmbedding:
			want = float64(mod.Each) // not quantized: gathered as is
		default:
			continue
		}
		checked++
		if got := sz.storageElems(mod); got != want {
			t.Errorf("%s: gathered as %.0f elements, want %.0f", mod.Name, got, want)
		}
	}
	if checked < 2 {
		t.Fatalf("found %d of the down projection and the embedding", checked)
	}
	// The largest module ZeRO-3 gathers is then the embedding, which
	// stays bf16, where unsharded the MLP projections weigh as much.
	if got, want := sz.largestModule(true), float64(m.Text.Vocab)*h; got != want {
		t.Errorf("largest gathered module %.0f elements, want the embedding's %.0f", got, want)
	}
}

// TestShardedQLoRAInputs: the storage dtype must be the model's for FSDP
// or ZeRO-3 to shard the 4-bit weights; unstated it is assumed and said;
// bitsandbytes before 0.43.0 had no storage dtype, and TRL before 0.8.0
// upcast what FSDP1 then cannot flatten.
func TestShardedQLoRAInputs(t *testing.T) {
	m := catalogModel(t, "meta-llama/Llama-2-7b-hf")
	with := func(f func(*Job)) Job {
		j := qloraFSDP()
		f(&j)
		return j
	}
	bad := []struct {
		job  Job
		want string
	}{
		{with(func(j *Job) { j.QuantStorage = "uint8" }), "quant_storage=uint8"},
		{with(func(j *Job) { j.QuantStorage = "fp16" }), "set quant_storage=bf16"},
		{with(func(j *Job) { j.QuantStorage = "int4" }), "want uint8, bf16"},
		{with(func(j *Job) { j.Stack = Stack{"bitsandbytes": "0.42.0"} }), "bitsandbytes before 0.43.0"},
		{with(func(j *Job) { j.Stack = Stack{"trl": "0.7.11"} }), "TRL 0.8.0 or later"},
	}
	for _, tt := range bad {
		if _, err := Estimate(m, tt.job); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("quant_storage %q, stack %v: %v, want an error containing %q", tt.job.QuantStorage, tt.job.Stack, err, tt.want)
		}
	}
	r := estimateOK(t, m, with(func(j *Job) { j.QuantStorage = "" }))
	if w := strings.Join(r.Warnings, "\n"); !strings.Contains(w, "assuming bnb_4bit_quant_storage bf16") {
		t.Errorf("warnings %q should state the assumed storage dtype", w)
	}
	full := estimateOK(t, m, Job{QuantStorage: "bf16", SeqLen: 512})
	if w := strings.Join(full.Warnings, "\n"); !strings.Contains(w, "quant_storage=bf16") {
		t.Errorf("warnings %q should say the storage dtype changes nothing without 4-bit weights", w)
	}
}

// TestShardedQLoRAProperties: sharding never raises a rank's model
// states, and the QuantState does not shrink with more ranks.
func TestShardedQLoRAProperties(t *testing.T) {
	m := catalogModel(t, "meta-llama/Llama-2-13b-hf")
	prev := math.Inf(1)
	var consts float64
	for _, n := range []int{2, 4, 8, 16} {
		j := qloraFSDP()
		j.NumGPUs, j.AllowLong = n, true
		var s setup
		if err := s.init(m, j); err != nil {
			t.Fatal(err)
		}
		var tp trainParts
		s.stageParts(&tp)
		if tp.st.weights > prev {
			t.Errorf("%d ranks: weights %.0f above %.0f", n, tp.st.weights, prev)
		}
		if consts != 0 && tp.st.weightsReplicated != consts {
			t.Errorf("%d ranks: constants %.0f, want %.0f whatever the rank count", n, tp.st.weightsReplicated, consts)
		}
		prev, consts = tp.st.weights, tp.st.weightsReplicated
		if tp.st.weights <= consts {
			t.Errorf("%d ranks: weights %.0f not above the constants %.0f", n, tp.st.weights, consts)
		}
	}
}
