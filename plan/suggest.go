package plan

import (
	"sort"
	"strings"

	"github.com/gpumem/gpumem/gpu"
	"github.com/gpumem/gpumem/memory"
	"github.com/gpumem/gpumem/units"
)

// Suggestion is one change to a training job and what it does to the
// per-GPU peak on a GPU: the answer to "what do I change so it fits?".
type Suggestion struct {
	// Change is the change in the job's JSON keys, e.g.
	// "grad_checkpoint=full"; a combined change lists its settings
	// separated by spaces.
	Change string `json:"change"`
	// Settings are the settings the change sets, in order, for front
	// ends that name them in their own words (flags, form labels).
	Settings []Setting `json:"settings"`
	// Why says what the change trades for the memory.
	Why string `json:"why"`
	// Combined is true for the set of changes that fits together when
	// no single one does (Change lists them all).
	Combined bool `json:"combined,omitempty"`
	// Fit is the changed job on the GPU.
	Fit
}

// Setting is one job setting: a memory.Job JSON key and its value as a
// query or flag takes it.
type Setting struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// String writes the setting as a job's JSON names it: key=value.
func (s Setting) String() string { return memory.KeyName(s.Key, s.Value) }

// knob is a change Suggest tries: it applies to a job (false when the
// job already has it or it does not apply).
type knob struct {
	set   Setting
	why   string
	apply func(j *memory.Job) bool
}

// knobs are the single changes Suggest tries, each one a setting a user
// can add; sharding and the batch are the GPU-count and batch searches'.
var knobs = []knob{
	{Setting{"grad_checkpoint", "full"}, "recomputes each layer's forward in backward (about a third more compute)", func(j *memory.Job) bool {
		if gc, _ := memory.ParseGradCheckpoint(j.GradCheckpoint); gc == "full" {
			return false
		}
		j.GradCheckpoint = "full"
		return true
	}},
	{Setting{"attn", "flash"}, "FlashAttention keeps no attention matrix (needs an Ampere or newer GPU)", func(j *memory.Job) bool {
		if norm(j.Attention) == "flash" {
			return false
		}
		j.Attention = "flash"
		return true
	}},
	{Setting{"fused_loss", "liger"}, "computes the loss in chunks without materialising fp32 logits (Liger kernel)", func(j *memory.Job) bool {
		if f := norm(j.Framework); (f != "" && f != memory.FrameworkHF) || norm(j.FusedLoss) != "" {
			return false
		}
		j.FusedLoss = "liger"
		return true
	}},
	{Setting{"optimizer", "paged_adamw_8bit"}, "8-bit optimizer states (bitsandbytes), paged to host memory when the GPU is full", func(j *memory.Job) bool {
		switch norm(j.Optimizer) {
		case "", "adamw", "adamw_torch", "adamw_torch_fused", "adam", "adamw_hf":
			j.Optimizer = "paged_adamw_8bit"
			return true
		}
		return false
	}},
	{Setting{"method", "lora"}, "trains low-rank adapters instead of every weight: no gradients or optimizer states for the base", func(j *memory.Job) bool {
		if m := norm(j.Method); m != "" && m != memory.MethodFull {
			return false
		}
		j.Method = memory.MethodLoRA
		return true
	}},
	{Setting{"method", "qlora"}, "LoRA on a 4-bit (NF4) base model", func(j *memory.Job) bool {
		if m := norm(j.Method); m == memory.MethodQLoRA || m == memory.MethodFrozen {
			return false
		}
		j.Method = memory.MethodQLoRA
		return true
	}},
}

// norm is a job option as the estimator compares it.
func norm(s string) string { return strings.ToLower(strings.TrimSpace(s)) }

// Suggest estimates a training job on g with each single change a user
// can make to its memory (checkpointing, attention, loss, optimizer,
// fine-tuning method) and returns those that lower the peak, lowest
// first. Changes the job already has, and changes the estimator rejects
// for this job, are left out. When no single change fits, the last
// suggestion is a set of them that fits together (see combine), if any
// does. Inference and serving jobs get none.
func Suggest(est EstimateFunc, job memory.Job, g gpu.GPU) []Suggestion {
	if job.Mode != "" && job.Mode != memory.Train {
		return nil
	}
	job = OnGPU(job, g)
	base, err := est(job)
	if err != nil {
		return nil
	}
	need := Need(base)
	var out []Suggestion
	var helps []knob
	for _, k := range knobs {
		j := job
		if !k.apply(&j) {
			continue
		}
		r, err := est(j)
		if err != nil || Need(r) >= need {
			continue
		}
		out = append(out, Suggestion{Change: k.set.String(), Settings: []Setting{k.set}, Why: k.why, Fit: Check(r, g)})
		helps = append(helps, k)
	}
	sort.SliceStable(out, func(a, b int) bool { return out[a].NeedBytes < out[b].NeedBytes })
	if c, ok := combine(est, job, g, out, helps); ok {
		out = append(out, c)
	}
	return out
}

// combine adds the helpful changes to the job one by one, largest single
// saving first, until it fits, then drops every change the others do not
// need (a minimal set, not necessarily the smallest). It returns false
// when a single change fits already, or even all of them together do
// not.
func combine(est EstimateFunc, job memory.Job, g gpu.GPU, singles []Suggestion, helps []knob) (Suggestion, bool) {
	if len(singles) < 2 || singles[0].Verdict == Fits {
		return Suggestion{}, false
	}
	byChange := make(map[string]knob, len(helps))
	for _, k := range helps {
		byChange[k.set.String()] = k
	}
	// with estimates job with the changes set; ok is false when one of
	// them does not apply on top of the others (lora after qlora).
	with := func(set []knob) (Fit, bool) {
		j := job
		for _, k := range set {
			if !k.apply(&j) {
				return Fit{}, false
			}
		}
		r, err := est(j)
		if err != nil {
			return Fit{}, false
		}
		return Check(r, g), true
	}
	var set []knob
	var fit Fit
	for _, s := range singles {
		trial := append(append([]knob(nil), set...), byChange[s.Change])
		f, ok := with(trial)
		if !ok {
			continue
		}
		set, fit = trial, f
		if fit.Verdict == Fits {
			break
		}
	}
	if fit.Verdict != Fits {
		return Suggestion{}, false
	}
	for i := 0; i < len(set) && len(set) > 1; {
		rest := append(append([]knob(nil), set[:i]...), set[i+1:]...)
		if f, ok := with(rest); ok && f.Verdict == Fits {
			set, fit = rest, f
			continue
		}
		i++
	}
	if len(set) < 2 {
		return Suggestion{}, false
	}
	changes := make([]string, len(set))
	settings := make([]Setting, len(set))
	for i, k := range set {
		changes[i], settings[i] = k.set.String(), k.set
	}
	return Suggestion{Change: strings.Join(changes, " "), Settings: settings, Why: "these changes together", Combined: true, Fit: fit}, true
}

// Savings is how much a suggestion saves against need.
func (s Suggestion) Savings(need units.Bytes) units.Bytes { return max(need-s.NeedBytes, 0) }
