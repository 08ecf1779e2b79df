package accuracy

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/gpumem/gpumem/memory"
	"github.com/gpumem/gpumem/model"
)

// Targets of the training model on the scoreable, reliability-ok
// single-GPU training records.
const (
	targetMedianPct = 5.0
	targetP90Pct    = 12.0
)

// notes records, for every scored training row outside ±5 % and every
// unscored training row the model estimates, which component is wrong
// and why. A row that drifts outside its band fails the test so the note
// is revisited.
var notes = map[string]struct {
	lo, hi float64 // accepted error band in percent
	why    string
}{
	// Unscored rows the model still estimates (reliability low).
	"litgpt-rt-llama2-7b-qlora-nf4-mb1":            {-5, 3, "bitsandbytes 0.41.1 keeps each 4-bit Linear's input (§15.3): modelled via the bnb<0.43.2 era; without it the row is -20 %"},
	"litgpt-rt-llama2-7b-qlora-nf4dq-mb1":          {-5, 3, "as the nf4 row, double-quantized constants"},
	"litgpt-rt-llama2-13b-qlora-nf4dq-mb1":         {-5, 3, "as the 7B QLoRA rows"},
	"litgpt-stablelm-3b-qlora-a10g":                {-25, -10, "newer litgpt QLoRA with an unstated bitsandbytes version; the source notes an unexplained QLoRA overhead"},
	"tf-docs-bert-large-fp32-bs4":                  {-3, 5, "pure fp32 BERT (§15.12 post-LN inventory 34h + 8f + 9a·s) on a torch 1.x stack: context 1343 MiB and 15 % fragmentation are era constants; mapping fp32 to AMP had made it -10 %"},
	"tf-docs-bert-large-fp16-bs1-ga4-gc":           {0, 12, "fp16 AMP BERT with checkpointing: the AMP weight-cast cache is counted through the forward (§15.9); with gradients alive (torch1) the step is close to the estimate"},
	"tf-docs-bert-large-fp16-bs1-ga4-gc-adafactor": {-5, 8, "Adafactor's factored states from real shapes"},
}

// devReport is the report on the first-round records, the ones the
// model was written against: the targets below are in-sample and hold
// for them. The second-round records are reported in ACCURACY.md beside
// them, with the leave-one-source-out errors, not asserted.
func devReport(t *testing.T) Report {
	t.Helper()
	return Run(firstRound(t), Options{})
}

// firstRound returns the development records of the first round.
func firstRound(t *testing.T) []Record {
	t.Helper()
	recs, err := DevRecords()
	if err != nil {
		t.Fatal(err)
	}
	var out []Record
	for _, r := range recs {
		if r.Round() == 1 {
			out = append(out, r)
		}
	}
	return out
}

// TestDevRounds checks the development set holds both rounds: the 88
// records the model was written against and the 113 shared later.
func TestDevRounds(t *testing.T) {
	recs, err := DevRecords()
	if err != nil {
		t.Fatal(err)
	}
	var n [3]int
	for _, r := range recs {
		n[r.Round()]++
	}
	if n[1] != 88 || n[2] != 113 {
		t.Errorf("rounds: %d first-round and %d second-round records, want 88 and 113", n[1], n[2])
	}
}

func TestDevTrainingTargets(t *testing.T) {
	rep := devReport(t)
	s, ok := rep.Summary("train")
	if !ok {
		t.Fatal("no scored single-GPU training rows")
	}
	t.Logf("single-GPU training: n=%d median |err| %.1f %%, p90 %.1f %%, bias %+.1f %%", s.N, s.MedianAbsPct, s.P90AbsPct, s.MedianPct)
	if s.N < 10 {
		t.Errorf("only %d scored single-GPU training rows, want at least 10", s.N)
	}
	if s.MedianAbsPct > targetMedianPct {
		t.Errorf("median |error| %.1f %% > target %.1f %%", s.MedianAbsPct, targetMedianPct)
	}
	if s.P90AbsPct > targetP90Pct {
		t.Errorf("p90 |error| %.1f %% > target %.1f %%", s.P90AbsPct, targetP90Pct)
	}
}

func TestDevTrainingRowsExplained(t *testing.T) {
	for _, row := range devReport(t).Rows {
		if row.Mode != "train" || !row.SingleGPU || row.Estimated == 0 {
			continue
		}
		n, noted := notes[row.ID]
		switch {
		case noted && (row.ErrorPct < n.lo || row.ErrorPct > n.hi):
			t.Errorf("%s: error %+.1f %% left its noted band [%v, %v] (%s)", row.ID, row.ErrorPct, n.lo, n.hi, n.why)
		case !noted && row.Scored && (row.ErrorPct < -5 || row.ErrorPct > 5):
			t.Errorf("%s: error %+.1f %% outside ±5 %% without a note naming the wrong component", row.ID, row.ErrorPct)
		}
	}
}

func TestDevRowsComparable(t *testing.T) {
	rep := devReport(t)
	var scored int
	for _, row := range rep.Rows {
		if row.Scored {
			scored++
			if row.Estimated <= 0 {
				t.Errorf("%s scored without an estimate", row.ID)
			}
		}
		if row.Metric == "unspecified" && row.Estimated != 0 {
			t.Errorf("%s: unspecified metric was compared", row.ID)
		}
	}
	if scored == 0 {
		t.Fatal("nothing scored")
	}
}

func TestTrainingJobMapping(t *testing.T) {
	seq, batch, accum, rank := 512, 4, 8, 16
	yes, no := true, false
	drop := 0.05
	tests := []struct {
		name string
		rec  Record
		want func(j memory.Job) string
	}{
		{"hf amp", Record{ID: "a", Framework: "transformers Trainer (2022)", Job: RecordJob{Mode: "train", Dtype: "fp16", MasterWeights: "fp32", SeqLen: &seq, PerDeviceBatch: &batch}},
			func(j memory.Job) string {
				if j.Dtype != "fp32" || j.ComputeDtype != "fp16" || j.MasterWeights != "" || j.MicroBatch != 4 || j.GradAccum != 1 {
					return "want AMP fp32 weights with fp16 autocast, batch 4"
				}
				return ""
			}},
		{"deepspeed keeps master", Record{ID: "b", Job: RecordJob{Mode: "train", Dtype: "bf16", MasterWeights: "fp32", Engine: "deepspeed", SeqLen: &seq}},
			func(j memory.Job) string {
				if j.Dtype != "bf16" || j.MasterWeights != "fp32" {
					return "want bf16 + fp32 master"
				}
				return ""
			}},
		{"litgpt qlora old bnb", Record{ID: "c", Framework: "lit-gpt @x, bitsandbytes 0.41.1", Job: RecordJob{Mode: "train", Dtype: "nf4", QLoRA: true, LoRA: true, LoRARank: &rank, LoRADropout: &drop, SeqLen: &seq, GradAccum: &accum, QuantFormat: "bitsandbytes nf4 + double quant (bnb 0.41.1), bf16 compute"}},
			func(j memory.Job) string {
				if j.Method != memory.MethodQLoRA || j.Framework != memory.FrameworkLitGPT || j.LoRARank != 16 || j.LoRADropout != 0.05 || j.GradAccum != 8 {
					return "want litgpt qlora r16 dropout 0.05 accum 8"
				}
				if j.DoubleQuant == nil || !*j.DoubleQuant || len(j.Stack) != 1 || j.Stack["bitsandbytes"] != "0.41.1" {
					return "want double quant and bitsandbytes 0.41.1 in the stack"
				}
				return ""
			}},
		{"torchtune fused loss compiled", Record{ID: "d", Framework: "torchtune recipes", Job: RecordJob{Mode: "train", Dtype: "bf16", FusedLoss: &yes, Compile: &yes, ActOffload: &yes, OptInBwd: &yes, GradCheckpoint: &yes, SeqLen: &seq}},
			func(j memory.Job) string {
				if j.FusedLoss != "chunked-compiled" || !j.Compile || !j.ActivationOffload || !j.OptimizerInBwd || j.GradCheckpoint != "full" {
					return "want compiled chunked CE, offload, optimizer in backward, full checkpointing"
				}
				return ""
			}},
		{"pure fp32", Record{ID: "f", Job: RecordJob{Mode: "train", Dtype: "fp32", MasterWeights: "none", SeqLen: &seq}},
			func(j memory.Job) string {
				if j.Dtype != "fp32" || j.ComputeDtype != "fp32" {
					return "want pure fp32 (no autocast)"
				}
				return ""
			}},
		{"selective checkpoint, torch1", Record{ID: "e", Job: RecordJob{Mode: "train", GradCheckpoint: &yes, CheckpointMode: "selective", FusedLoss: &no, SeqLen: &seq, ReliabilityNote: "2022 software stack: torch 1.x"}},
			func(j memory.Job) string {
				if j.GradCheckpoint != "selective" || j.FusedLoss != "" || j.Dtype != "bf16" || len(j.Stack) != 1 || j.Stack["torch"] != "1.12.1" {
					return "want selective checkpointing, no fused loss, default bf16, torch 1.12.1"
				}
				return ""
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j, err := TrainingJob(tt.rec)
			if err != nil {
				t.Fatal(err)
			}
			if msg := tt.want(j); msg != "" {
				t.Errorf("%s; got %+v", msg, j)
			}
		})
	}
	if _, err := TrainingJob(Record{ID: "noseq", Job: RecordJob{Mode: "train"}}); err == nil || !strings.Contains(err.Error(), "seq_len") {
		t.Errorf("missing seq_len: err = %v", err)
	}
}

func TestRegisterMapper(t *testing.T) {
	seq := 128
	rec := Record{ID: "x", Job: RecordJob{Mode: "custom", ConfigID: "meta-llama/Llama-2-7b-hf", MetricKind: "allocated", ValueBytes: 20 << 30, SeqLen: &seq, Scoreable: true, Reliability: "ok", NumGPUs: 1}}
	rep := Run([]Record{rec}, Options{})
	if rep.Rows[0].Estimated != 0 || !strings.Contains(rep.Rows[0].Note, "no mapper") {
		t.Fatalf("unregistered mode: row %+v", rep.Rows[0])
	}
	RegisterMapper("custom", func(r Record) (memory.Job, error) { return memory.Job{SeqLen: *r.Job.SeqLen}, nil })
	defer func() {
		mappersMu.Lock()
		delete(mappers, "custom")
		mappersMu.Unlock()
	}()
	rep = Run([]Record{rec}, Options{})
	if rep.Rows[0].Estimated == 0 || !rep.Rows[0].Scored {
		t.Fatalf("registered mode: row %+v", rep.Rows[0])
	}
	if _, ok := rep.Summary("custom"); !ok {
		t.Error("no summary for the registered mode")
	}
}

func TestRunModelErrors(t *testing.T) {
	seq := 128
	recs := []Record{
		{ID: "missing", Job: RecordJob{Mode: "train", ConfigID: "nobody/nothing", MetricKind: "allocated", ValueBytes: 1, SeqLen: &seq}},
		{ID: "path", Job: RecordJob{Mode: "train", ConfigPath: "hf-configs/meta-llama__Llama-2-7b-hf.json", MetricKind: "device", ValueBytes: 1 << 34, SeqLen: &seq}},
	}
	calls := 0
	opt := Options{Models: func(id string) (*model.Model, error) {
		calls++
		if id == "nobody/nothing" {
			return nil, model.ErrNotFound
		}
		return model.Lookup(id)
	}}
	rep := Run(recs, opt)
	if !strings.Contains(rep.Rows[0].Note, "nobody/nothing") || rep.Rows[0].Estimated != 0 {
		t.Errorf("unknown model: %+v", rep.Rows[0])
	}
	if rep.Rows[1].Estimated == 0 || calls != 2 {
		t.Errorf("config_path fallback: %+v (calls %d)", rep.Rows[1], calls)
	}
	if !errors.Is(model.ErrNotFound, model.ErrNotFound) {
		t.Fatal("sentinel")
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"not json", "{", "measurements"},
		{"no id", `[{"job":{"mode":"train","metric_kind":"allocated"}}]`, "missing id"},
		{"dup", `[{"id":"a","job":{"mode":"train","metric_kind":"x"}},{"id":"a","job":{"mode":"train","metric_kind":"x"}}]`, "duplicate"},
		{"no mode", `[{"id":"a","job":{"metric_kind":"x"}}]`, "job.mode"},
		{"no metric", `[{"id":"a","job":{"mode":"train"}}]`, "metric_kind"},
		{"negative", `[{"id":"a","job":{"mode":"train","metric_kind":"x","value_bytes":-1}}]`, "negative"},
		{"bad targets", `[{"id":"a","job":{"mode":"train","metric_kind":"x","lora_target_modules":3}}]`, "lora_target_modules"},
	}
	for _, tt := range tests {
		if _, err := Parse([]byte(tt.in)); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: err = %v, want one containing %q", tt.name, err, tt.want)
		}
	}
}

func TestSummaryStatistics(t *testing.T) {
	s := summaryOf("g", []float64{-10, 2, -3, 4, 1, 20, -1, 0.5, 6, 8})
	if s.N != 10 || s.MedianAbsPct != 3.5 || s.P90AbsPct != 10 || s.MedianPct != 1.5 {
		t.Errorf("summary = %+v, want n 10, median 3.5, p90 10, signed median 1.5", s)
	}
	if z := summaryOf("e", nil); z.MedianAbsPct != 0 || z.P90AbsPct != 0 {
		t.Errorf("empty summary = %+v", z)
	}
}

// TestServingComponents checks that the vLLM records whose value is a
// part of the serving budget (the KV-cache pool, the weights) are compared
// with the same part of the serving estimate, within 2 %, and kept out of
// the summaries of peaks.
func TestServingComponents(t *testing.T) {
	rep := devReport(t)
	n := 0
	for _, row := range rep.Rows {
		if !row.Component {
			if row.Mode == "serving" && (row.Metric == "kv_pool" || row.Metric == "weights_only") {
				t.Errorf("%s: a serving %s row not compared as a component", row.ID, row.Metric)
			}
			continue
		}
		if row.Scored {
			t.Errorf("%s: a component counted as a scored peak", row.ID)
		}
		if row.Estimated == 0 {
			if !strings.Contains(row.Note, "config") {
				t.Errorf("%s: no estimate (%s)", row.ID, row.Note)
			}
			continue
		}
		n++
		if math.Abs(row.ErrorPct) > 2 {
			t.Errorf("%s %s: measured %s, estimated %s (%+.1f %%)", row.ID, row.Metric, row.Measured, row.Estimated, row.ErrorPct)
		}
	}
	if n < 5 || rep.Components.N != n {
		t.Errorf("%d component rows estimated, summary over %d; want at least 5, all summarized", n, rep.Components.N)
	}
	for _, s := range rep.Summaries {
		if strings.Contains(s.Group, "kv_pool") || strings.Contains(s.Group, "weights_only") {
			t.Errorf("summary group %q: components must not count among the peaks", s.Group)
		}
	}
	if md := rep.Markdown(); !strings.Contains(md, "## Serving components") || !strings.Contains(md, "| vllm019-llama31-8b-tp1 | kv_pool |") {
		t.Error("markdown lacks the serving components table")
	}
}

func TestRenderers(t *testing.T) {
	rep := devReport(t)
	md, txt := rep.Markdown(), rep.Text()
	for _, want := range []string{"| id | round | mode |", "litgpt-rt-llama2-7b-lora-mb1", "| train |", "## Leave one source out", "## What informed what"} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q", want)
		}
	}
	for _, want := range []string{"MEASURED", "litgpt-rt-llama2-7b-lora-mb1", "median |err|"} {
		if !strings.Contains(txt, want) {
			t.Errorf("text lacks %q", want)
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add(devData[:0])
	f.Add([]byte(`[{"id":"a","job":{"mode":"train","metric_kind":"allocated","seq_len":128,"value_bytes":1024,"lora_target_modules":"all-linear"}}]`))
	f.Add([]byte(`[]`))
	f.Add([]byte(`[{"id":"a","job":{"mode":"train","metric_kind":"x","per_device_batch":-4,"seq_len":-1}}]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		recs, err := Parse(data)
		if err != nil {
			return
		}
		// Whatever parses must run without panicking.
		rep := Run(recs, Options{Models: func(string) (*model.Model, error) { return nil, model.ErrNotFound }})
		if len(rep.Rows) != len(recs) {
			t.Errorf("%d rows for %d records", len(rep.Rows), len(recs))
		}
	})
}

// multiGPUNotes bands the multi-GPU training rows. They are reported and
// summarised separately from the single-GPU targets; each band says what
// the estimate is believed to miss.
//
// The targets (median |error| <= 5 %, p90 <= 12 %) are asserted on the
// scored rows (the torchtitan PR #165 runs). With full or op-level
// checkpointing the allocated estimate agrees with the logged active
// peak to within 3 % (TestDevMultiGPUAllocated); the reserved gap has a
// sourced cause: FSDP allocates its all-gather outputs and reduce-scatter
// buffers on its own CUDA streams, the caching allocator reuses a freed
// block on its stream only, and the sharded gradients (fp32 here,
// 3.14 GiB) are views of the reduce-scatter output, freed by zero_grad
// before forward into that stream's pool. memory's stream_cache
// (alloc_streams.go) counts these pools: 5.36 GiB for FSDP2 (all-gather
// outputs 0.87 GiB, reduce-scatter pool 4.87 GiB, less the prefetched
// output alive at the peak), 4.87 GiB for FSDP1, with the training
// fragmentation for the compute stream.
//
// The SAC rows ran torchtitan's op-level selective checkpointing (the
// records' job notes say why), mapped to "op", which the estimator reads
// with framework torchtitan as that policy (memory titanOpSaved): per
// block and token the block input, the outputs of the 1st, 3rd, 5th and
// 7th mm (wq: h, wv: kv width, w1: FFN width, w2: h) and of the SDPA
// kernel (h, and an fp32 logsumexp per head), all else recomputed:
// (4h + kv + ffn)·2 + 4·heads bytes, 30.81 GiB at batch 8. Allocated is
// then 49.8 GiB against 50.35 (FSDP1) and 49.54 GiB (FSDP2) logged
// active. Compiled, AOTAutograd saves only what backward reads, so w2's
// output (it feeds the residual add alone) is not kept: 4 GiB less at
// batch 8, which the compiled rows measured (5.6 GiB below eager
// reserved).
var multiGPUNotes = map[string]struct {
	lo, hi float64
	why    string
}{
	"torchtitan-pr165-llama7b-fsdp1-ac-bs8":           {-12, -6, "allocated 22.97 GiB vs 23.58 GiB logged active (-2.6 %) once the fp32 logits the early-2024 loop held through backward are counted (software torchtitan-2024q1); reserved is 36 % above active, of which the stream pools (4.87 GiB: sharded fp32 gradients and the unit's and root's fp32 reduce-scatter inputs on the post-backward stream) are counted. FSDP1's remainder (≈ 1.6 GiB more than FSDP2's) is not explained; sized and ruled out from torch/distributed/fsdp (_runtime_utils.py, _flat_param.py): the bf16 cast of the local shard under mixed precision, allocated on the pre-unshard stream (_use_low_precision_shard) and freed after the all-gather, a third pool of about one unit's shard (≈ 0.05-0.1 GiB); the autograd bf16 unsharded gradient, record_stream'd to the post-backward stream, which only delays its reuse in the compute stream's pool; padded copies of the flat parameter or gradient, none here (every unit's and the root's size divides by 8)"},
	"torchtitan-pr165-llama7b-fsdp2-ac-bs8":           {-7, -1, "allocated within 1.1 % of the logged active 22.73 GiB; reserved 36 % above active, most of it the stream pools (5.36 GiB); about 1.5 GiB is left unexplained"},
	"torchtitan-pr165-llama7b-fsdp2-ac-compile-bs8":   {0, 6, "as the FSDP2 row; compile shrinks the recomputed layer (active peak not logged)"},
	"torchtitan-pr165-llama7b-fsdp2-noac-compile-bs8": {-2, 8, "no checkpointing: activations dominate and match; the stream pools are counted"},
	"torchtitan-pr165-llama7b-fsdp1-sac-bs8":          {-14, -6, "torchtitan's op-level policy (titanOpSaved) keeps 30.81 GiB of activations; allocated 49.8 GiB vs 50.35 GiB logged active (-1.1 %); reserved low by FSDP1's unexplained remainder, larger here (reserved 13.55 GiB above active against FSDP2's 9.87 GiB; see the FSDP1 AC row for what was ruled out)"},
	"torchtitan-pr165-llama7b-fsdp2-sac-bs8":          {-6, 2, "torchtitan's op-level policy: allocated 49.8 GiB vs 49.54 GiB logged active (+0.5 %); reserved with the stream pools (5.36 GiB)"},
	"torchtitan-pr165-llama7b-fsdp2-sac-compile-bs8":  {-4, 4, "as the FSDP2 SAC row, compiled: AOTAutograd does not keep w2's output, which backward never reads (4 GiB less; active peak not logged)"},
	"torchtitan-pr165-llama7b-fsdp2-sac-compile-bs16": {-1, 7, "as the compiled SAC row at batch 16: reserved 91.1 GiB of 95.04 GiB, where the allocator under pressure may release cached blocks the estimate counts (active peak not logged)"},
	"peft-docs-llama2-70b-lora-zero3-8xh100":          {-20, -10, "read from a screenshot (low reliability, unit ±7 %); ZeRO-3's gathered working set is the largest module + prefetch bucket, and in backward under checkpointing the parameters kept for reuse within stage3_max_reuse_distance (gate, up and down of the layer, 1.31 GiB; stage3_max_live_parameters bounds prefetching only); its stream pools are counted as FSDP's (stream_cache: the reduce stream's flat reduce-scatter copy of one bucket, 0.125 GiB; the all-gather stream's pool is the gathered working set, counted as allocated) with the training fragmentation, where fragmentation_sharded's 15 % had stood for them (-9.5 % then). The reduce bucket (the auto hidden², 0.125 GiB, below the 0.1 B adapters) and the gradient partitions are now kept from start-up as stage3.py allocates them, which changes nothing at this backward peak"},
	"peft-docs-llama2-70b-lora-fsdp-8xh100":           {-2, 8, "read from a 72-80 GB screenshot range, lower end chosen (low reliability); FSDP mixed precision shards the fp32-loaded model (4 B/param sharded, 32 GiB here) — against the range's upper end the error is -0.5 %"},
}

// multiGPUActive are the peak active bytes torchtitan logged next to the
// reserved figure (the records' other_measurements.peak_active_GiB): the
// allocated estimate is compared with them.
var multiGPUActive = map[string]float64{
	"torchtitan-pr165-llama7b-fsdp1-ac-bs8":  23.579,
	"torchtitan-pr165-llama7b-fsdp2-ac-bs8":  22.733,
	"torchtitan-pr165-llama7b-fsdp1-sac-bs8": 50.352,
	"torchtitan-pr165-llama7b-fsdp2-sac-bs8": 49.544,
}

func TestDevMultiGPUAllocated(t *testing.T) {
	recs, err := DevRecords()
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, r := range recs {
		gib, ok := multiGPUActive[r.ID]
		if !ok {
			continue
		}
		seen++
		job, err := TrainingJob(r)
		if err != nil {
			t.Fatal(err)
		}
		m, err := model.Lookup(r.Job.ConfigID)
		if err != nil {
			t.Fatal(err)
		}
		res, err := memory.Estimate(m, job)
		if err != nil {
			t.Fatal(err)
		}
		got := float64(res.PerGPU.AllocatedPeakBytes) / (1 << 30)
		if e := 100 * (got - gib) / gib; e < -5 || e > 5 {
			t.Errorf("%s: allocated %.2f GiB vs logged active %.2f GiB (%+.1f %%), want within ±5 %%", r.ID, got, gib, e)
		}
	}
	if seen != len(multiGPUActive) {
		t.Errorf("%d of %d records with a logged active peak found", seen, len(multiGPUActive))
	}
}

func TestDevMultiGPURowsNoted(t *testing.T) {
	rep := devReport(t)
	seen := 0
	for _, row := range rep.Rows {
		n, ok := multiGPUNotes[row.ID]
		if !ok {
			continue
		}
		seen++
		if row.Estimated == 0 || row.ErrorPct < n.lo || row.ErrorPct > n.hi {
			t.Errorf("%s: error %+.1f %% outside its noted band [%v, %v] (%s)", row.ID, row.ErrorPct, n.lo, n.hi, n.why)
		}
	}
	if seen != len(multiGPUNotes) {
		t.Errorf("%d of %d noted multi-GPU rows found", seen, len(multiGPUNotes))
	}
	// The targets of the training issue hold for the scored multi-GPU
	// rows too: median |error| <= 5 %, p90 <= 12 %.
	s, ok := rep.Summary("train multi-gpu")
	if !ok || s.N < 4 {
		t.Fatalf("want at least 4 scored multi-GPU training rows, got %+v", s)
	}
	t.Logf("multi-GPU training: n=%d median |err| %.1f %%, p90 %.1f %%", s.N, s.MedianAbsPct, s.P90AbsPct)
	if s.MedianAbsPct > 5 || s.P90AbsPct > 12 {
		t.Errorf("multi-GPU training: median |err| %.1f %%, p90 %.1f %%; want <= 5 %% and <= 12 %%", s.MedianAbsPct, s.P90AbsPct)
	}
}

func TestRunConstantsOverride(t *testing.T) {
	recs, err := DevRecords()
	if err != nil {
		t.Fatal(err)
	}
	var one []Record
	for _, r := range recs {
		if r.ID == "litgpt-rt-llama2-7b-lora-mb1" {
			one = append(one, r)
		}
	}
	base := Run(one, Options{})
	more := Run(one, Options{Constants: map[string]float64{"activation_scale": 1.5}})
	if more.Rows[0].Estimated <= base.Rows[0].Estimated {
		t.Errorf("activation_scale 1.5 did not raise the estimate: %d <= %d", more.Rows[0].Estimated, base.Rows[0].Estimated)
	}
	bad := Run(one, Options{Constants: map[string]float64{"activation_scal": 1.5}})
	if bad.Rows[0].Estimated != 0 || !strings.Contains(bad.Rows[0].Note, "activation_scal") {
		t.Errorf("unknown constant: row %+v", bad.Rows[0])
	}
}
