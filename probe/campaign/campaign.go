// Package campaign prepares the probe campaign: a matrix of jobs that
// measure gpumem's estimates on one GPU, each through the synthetic probe
// (probe/script/probe.py) in a fresh process.
//
// The GPU host needs neither Go nor network access: [Build] turns
// [Matrix] into jobs.json, with every job's estimate computed here, and
// the catalog config.json files the jobs build, and `go test
// ./probe/campaign -update` writes them next to campaign.py, the runner,
// which is Python's standard library alone. On the GPU host
//
//	python3 probe/campaign/campaign.py --budget 420 --out OUT
//
// runs the jobs cheapest first within the time budget and writes one JSON
// line per job to OUT/results.jsonl (schema [ResultSchema]); `gpumem probe
// --from-campaign OUT/results.jsonl` compares them with today's estimates
// and keeps the measured ones as records with their provenance (package
// accuracy, ProbeRun).
//
// Nothing here has run on a GPU yet. The runner and the probe script are
// tested against stand-in torch, transformers, peft and pynvml packages
// (probe/testdata/fakepy), which exercise their control flow only.
package campaign

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/gpumem/gpumem/gpu"
	"github.com/gpumem/gpumem/memory"
	"github.com/gpumem/gpumem/model"
	"github.com/gpumem/gpumem/plan"
	"github.com/gpumem/gpumem/units"
)

// Schemas of the job list and of the runner's result lines.
const (
	JobsSchema   = "gpumem-probe-campaign-jobs/1"
	ResultSchema = "gpumem-probe-campaign/1"
)

// EstimateGPU is the board the job list's estimates are for: the smaller
// of the two the campaign is meant for (an H100 80 GB; an H200 has 141
// GB). The runner skips a job whose estimated device peak exceeds the
// GPU's memory; the records are estimated again for the GPU that ran them.
const EstimateGPU = "H100-SXM"

// Steps of every job: one warm-up step (the optimizer's states appear at
// its first step) and two measured ones, the fewest that show a steady
// peak; the campaign has minutes on the GPU, not hours.
const (
	Warmup = 1
	Steps  = 2
)

// Files the runner reads, relative to this package's folder.
const (
	JobsFile   = "jobs.json"
	ConfigsDir = "configs"
)

// File is jobs.json.
type File struct {
	Schema string `json:"schema"`
	// Regenerate is the command that writes the file.
	Regenerate  string `json:"regenerate"`
	EstimateGPU string `json:"estimate_gpu"`
	Warmup      int    `json:"warmup"`
	Steps       int    `json:"steps"`
	// Jobs are in the order the runner takes them: by estimated device
	// peak, torch.compile last.
	Jobs []Job `json:"jobs"`
}

// Job is one job of jobs.json.
type Job struct {
	ID    string `json:"id"`
	Model string `json:"model"`
	// ModelID is the catalog id the alias Model names.
	ModelID string `json:"model_id"`
	// Config is the config.json the job builds, relative to jobs.json.
	Config       string   `json:"config"`
	ConfigSHA256 string   `json:"config_sha256"`
	Groups       []string `json:"groups"`
	What         string   `json:"what"`
	// Job is what the probe script reads and gpumem estimates.
	Job memory.Job `json:"job"`
	// CacheImplementation is the probe's --cache-implementation.
	CacheImplementation string `json:"cache_implementation,omitempty"`
	// Requires are the Python modules the probe needs for the job.
	Requires []string `json:"requires"`
	Note     string   `json:"note,omitempty"`
	Estimate Estimate `json:"estimate"`
}

// Estimate is gpumem's estimate of a job on [EstimateGPU] when the job
// list was written.
type Estimate struct {
	GPU                string         `json:"gpu"`
	AllocatedPeakBytes units.Bytes    `json:"allocated_peak_bytes"`
	ReservedPeakBytes  units.Bytes    `json:"reserved_peak_bytes"`
	DevicePeakBytes    units.Bytes    `json:"device_peak_bytes"`
	PeakPhase          string         `json:"peak_phase"`
	Phases             []memory.Phase `json:"phases"`
}

// Build estimates every job of the matrix and returns the job list and
// the config.json files it names (file name → bytes).
func Build(entries []Entry) (File, map[string][]byte, error) {
	board, err := gpu.Lookup(EstimateGPU)
	if err != nil {
		return File{}, nil, err
	}
	f := File{Schema: JobsSchema, Regenerate: "go test ./probe/campaign -update", EstimateGPU: board.Name, Warmup: Warmup, Steps: Steps}
	configs := map[string][]byte{}
	seen := map[string]bool{}
	for _, e := range entries {
		if seen[e.ID] {
			return File{}, nil, fmt.Errorf("campaign: job id %s twice", e.ID)
		}
		seen[e.ID] = true
		j, cfg, err := buildJob(e, board)
		if err != nil {
			return File{}, nil, err
		}
		configs[filepath.Base(j.Config)] = cfg
		f.Jobs = append(f.Jobs, j)
	}
	slices.SortStableFunc(f.Jobs, func(a, b Job) int {
		return cmp.Or(cmp.Compare(rank(a), rank(b)), cmp.Compare(a.Estimate.DevicePeakBytes, b.Estimate.DevicePeakBytes))
	})
	return f, configs, nil
}

// rank puts torch.compile after every other job: compiling takes longer
// than the run.
func rank(j Job) int {
	if slices.Contains(j.Groups, GroupCompile) {
		return 1
	}
	return 0
}

// buildJob resolves, estimates and describes one entry.
func buildJob(e Entry, board gpu.GPU) (Job, []byte, error) {
	m, err := model.Lookup(e.Model)
	if err != nil {
		return Job{}, nil, fmt.Errorf("campaign: job %s: %w", e.ID, err)
	}
	cfg, err := model.CatalogConfig(e.Model)
	if err != nil {
		return Job{}, nil, fmt.Errorf("campaign: job %s: %w", e.ID, err)
	}
	res, err := memory.Estimate(m, plan.OnGPU(e.Job, board))
	if err != nil {
		return Job{}, nil, fmt.Errorf("campaign: job %s: estimate: %w", e.ID, err)
	}
	sum := sha256.Sum256(cfg)
	p := res.PerGPU
	return Job{
		ID: e.ID, Model: e.Model, ModelID: m.ID,
		Config: ConfigsDir + "/" + e.Model + ".json", ConfigSHA256: hex.EncodeToString(sum[:]),
		Groups: e.Groups, What: e.What, Job: e.Job, CacheImplementation: e.Cache, Note: e.Note,
		Requires: requires(e.Job),
		Estimate: Estimate{GPU: board.Name, AllocatedPeakBytes: p.AllocatedPeakBytes, ReservedPeakBytes: p.ReservedPeakBytes,
			DevicePeakBytes: p.DevicePeakBytes, PeakPhase: p.PeakPhase, Phases: p.Phases},
	}, cfg, nil
}

// bnbOptimizers are the Hugging Face optim names the probe runs with
// bitsandbytes (script/probe.py BNB_OPTIMIZERS).
var bnbOptimizers = []string{"adamw_bnb_8bit", "adamw_8bit", "paged_adamw_8bit", "paged_adamw_32bit",
	"lion_8bit", "lion_32bit", "paged_lion_8bit", "paged_lion_32bit"}

// requires lists the Python modules the probe imports for a job.
func requires(j memory.Job) []string {
	out := []string{"torch", "transformers"}
	switch strings.ToLower(j.Method) {
	case "lora":
		out = append(out, "peft")
	case "qlora":
		out = append(out, "peft", "bitsandbytes")
	}
	if slices.Contains(bnbOptimizers, strings.ToLower(j.Optimizer)) && !slices.Contains(out, "bitsandbytes") {
		out = append(out, "bitsandbytes")
	}
	if strings.EqualFold(j.Attention, "flash") {
		out = append(out, "flash_attn")
	}
	return out
}

// Write writes jobs.json and the config files into dir and removes config
// files no job names any more.
func Write(dir string, f File, configs map[string][]byte) error {
	data, err := Encode(f)
	if err != nil {
		return err
	}
	cdir := filepath.Join(dir, ConfigsDir)
	if err := os.MkdirAll(cdir, 0o755); err != nil {
		return err
	}
	old, err := os.ReadDir(cdir)
	if err != nil {
		return err
	}
	for _, e := range old {
		if _, ok := configs[e.Name()]; !ok {
			if err := os.Remove(filepath.Join(cdir, e.Name())); err != nil {
				return err
			}
		}
	}
	for name, cfg := range configs {
		if err := os.WriteFile(filepath.Join(cdir, name), cfg, 0o644); err != nil {
			return err
		}
	}
	return os.WriteFile(filepath.Join(dir, JobsFile), data, 0o644)
}

// Encode is jobs.json as written: indented, one job after another.
func Encode(f File) ([]byte, error) {
	data, err := json.MarshalIndent(f, "", " ")
	if err != nil {
		return nil, fmt.Errorf("campaign: encode %s: %w", JobsFile, err)
	}
	return append(data, '\n'), nil
}
