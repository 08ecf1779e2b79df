// Package accuracy checks the memory model against published measurements.
//
// It reads measurement records (each a real run with its source, what was
// measured and a normalised job description), maps every record onto a
// [memory.Job], estimates it with [memory.Estimate] and compares like with
// like: a measured torch.cuda.max_memory_allocated with the allocated
// peak, max_memory_reserved with the reserved peak, an nvidia-smi figure
// with the device peak.
//
// # Usage
//
//	recs, _ := accuracy.DevRecords()
//	rep := accuracy.Run(recs, accuracy.Options{})
//	fmt.Print(rep.Markdown())
//
// # Extending
//
// Records are mapped by mode through [RegisterMapper]; the training
// mapping is built in, other modes (inference, serving) register theirs.
package accuracy

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"strings"
)

//go:embed testdata/measurements-dev.json
var devData []byte

// Record is one published measurement.
type Record struct {
	// ID is the record's unique slug.
	ID string `json:"id"`
	// Source is repository:path, issue or paper the number comes from.
	Source string `json:"source"`
	// SourceURL is a pinned link to the source where available.
	SourceURL string `json:"source_url,omitempty"`
	// ModelID is the model as the source names it.
	ModelID string `json:"model_id"`
	// Mode is the source's run kind: train_full, lora, qlora,
	// frozen_partial, inference, serving.
	Mode string `json:"mode"`
	// PEFTMethod is the source's description of the PEFT method
	// ("Prompt tuning (200 virtual tokens)").
	PEFTMethod string `json:"peft_method,omitempty"`
	// Framework is the software the source states (versions included).
	Framework string `json:"framework,omitempty"`
	// Notes are the curator's notes.
	Notes string `json:"notes,omitempty"`
	// Grade is A, B or C (see the data README).
	Grade string `json:"grade,omitempty"`
	// Job is the normalised, machine-readable run description.
	Job RecordJob `json:"job"`
	// Other holds other numbers from the same run.
	Other map[string]any `json:"other_measurements,omitempty"`
	// TurnNote marks the records held out while the model was first
	// written ("held out in the first round; ..."): see [Record.Round].
	TurnNote string `json:"turn_note,omitempty"`
}

// Round is the round of the development set a record was shared in: 1
// for the records the memory model was written against, 2 for those held
// out then and shared later (their turn_note says so). No constant or
// rule of the model was read off a round-2 record before it was shared.
func (r Record) Round() int {
	if strings.Contains(strings.ToLower(r.TurnNote), "held out in the first round") {
		return 2
	}
	return 1
}

// RecordJob is the normalised job object of a record. Nullable fields are
// pointers: nil means the source does not state the value.
type RecordJob struct {
	Model           string   `json:"model"`
	ConfigID        string   `json:"config_id"`
	ConfigPath      string   `json:"config_path"`
	Mode            string   `json:"mode"`
	Serving         bool     `json:"serving"`
	Dtype           string   `json:"dtype"`
	MasterWeights   string   `json:"master_weights"`
	Optimizer       string   `json:"optimizer"`
	PerDeviceBatch  *int     `json:"per_device_batch"`
	GradAccum       *int     `json:"grad_accum"`
	SeqLen          *int     `json:"seq_len"`
	Packed          *bool    `json:"packed_or_fixed_len"`
	GradCheckpoint  *bool    `json:"grad_checkpoint"`
	CheckpointMode  string   `json:"grad_checkpoint_mode"`
	Attn            string   `json:"attn"`
	FusedLoss       *bool    `json:"fused_loss"`
	LoRA            bool     `json:"lora"`
	QLoRA           bool     `json:"qlora"`
	LoRARank        *int     `json:"lora_rank"`
	LoRAAlpha       *int     `json:"lora_alpha"`
	LoRATargets     Targets  `json:"lora_target_modules"`
	LoRADropout     *float64 `json:"lora_dropout"`
	PEFTVariant     string   `json:"peft_variant"`
	TrainableParam  *int64   `json:"trainable_params"`
	Engine          string   `json:"engine"`
	ZeRO            *int     `json:"zero"`
	DP              int      `json:"dp"`
	TP              int      `json:"tp"`
	PP              int      `json:"pp"`
	CP              int      `json:"cp"`
	EP              int      `json:"ep"`
	NumGPUs         int      `json:"num_gpus"`
	OffloadOpt      string   `json:"offload_optimizer"`
	OffloadParams   string   `json:"offload_params"`
	Batch           *int     `json:"batch"`
	PromptLen       *int     `json:"prompt_len"`
	GenLen          *int     `json:"gen_len"`
	KVCacheDtype    string   `json:"kv_cache_dtype"`
	MaxModelLen     *int     `json:"max_model_len"`
	GPUMemUtil      *float64 `json:"gpu_memory_utilization"`
	GPU             string   `json:"gpu"`
	GPUMemoryGiB    *float64 `json:"gpu_memory_gib"`
	MetricKind      string   `json:"metric_kind"`
	PerGPU          bool     `json:"per_gpu"`
	ValueBytes      int64    `json:"value_bytes"`
	UnitAmbiguous   bool     `json:"unit_ambiguous"`
	ValueIsBound    bool     `json:"value_is_bound"`
	Scoreable       bool     `json:"scoreable"`
	Reliability     string   `json:"reliability"`
	ReliabilityNote string   `json:"reliability_note"`
	Inferred        []string `json:"inferred_fields"`
	ActOffload      *bool    `json:"activation_offload"`
	OptInBwd        *bool    `json:"optimizer_in_backward"`
	Compile         *bool    `json:"torch_compile"`
	TaskHead        string   `json:"task_head"`
	QuantFormat     string   `json:"quant_format"`
	SoftwareNote    string   `json:"software_note"`
}

// Targets is lora_target_modules: a list of names or one string such as
// "all-linear".
type Targets []string

// UnmarshalJSON accepts a JSON string or a list of strings.
func (t *Targets) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*t = nil
		return nil
	}
	var one string
	if err := json.Unmarshal(b, &one); err == nil {
		*t = Targets{one}
		return nil
	}
	var list []string
	if err := json.Unmarshal(b, &list); err != nil {
		return fmt.Errorf("lora_target_modules: want a string or a list of strings: %w", err)
	}
	*t = list
	return nil
}

// maxRecordsBytes bounds the input Parse accepts (the dev set is < 1 MiB).
const maxRecordsBytes = 64 << 20

// Parse reads a JSON array of measurement records. Every record needs an
// id, a job with a mode and a metric kind.
func Parse(data []byte) ([]Record, error) {
	if len(data) > maxRecordsBytes {
		return nil, fmt.Errorf("measurements: %d bytes, more than the %d accepted", len(data), maxRecordsBytes)
	}
	var recs []Record
	if err := json.Unmarshal(data, &recs); err != nil {
		return nil, fmt.Errorf("measurements: %w", err)
	}
	seen := make(map[string]bool, len(recs))
	for i, r := range recs {
		switch {
		case r.ID == "":
			return nil, fmt.Errorf("measurements: record %d: missing id", i)
		case seen[r.ID]:
			return nil, fmt.Errorf("measurements: record %d: duplicate id %q", i, r.ID)
		case r.Job.Mode == "":
			return nil, fmt.Errorf("measurements: %s: job.mode missing", r.ID)
		case r.Job.MetricKind == "":
			return nil, fmt.Errorf("measurements: %s: job.metric_kind missing", r.ID)
		case r.Job.ValueBytes < 0:
			return nil, fmt.Errorf("measurements: %s: job.value_bytes %d is negative", r.ID, r.Job.ValueBytes)
		}
		seen[r.ID] = true
	}
	return recs, nil
}

// DevRecords returns the embedded development set of measurements.
func DevRecords() ([]Record, error) { return Parse(devData) }
