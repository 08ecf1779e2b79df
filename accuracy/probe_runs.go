package accuracy

import (
	"bufio"
	"bytes"
	"cmp"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"slices"

	"github.com/gpumem/gpumem/memory"
	"github.com/gpumem/gpumem/probe"
	"github.com/gpumem/gpumem/units"
)

// Schemas of gpumem's own measured runs and of the campaign lines they are
// made from (probe/campaign).
const (
	ProbeRunSchema = "gpumem-probe-run/1"
	campaignSchema = "gpumem-probe-campaign/1"
)

// Statuses of a probe run that measured something: the job ran its steps
// (ok), or ran out of GPU memory with its peaks up to the failure (oom).
const (
	StatusOK  = "ok"
	StatusOOM = "oom"
)

// probeRunSource is the Source of every record the campaign produces.
const probeRunSource = "gpumem probe campaign (probe/campaign/campaign.py running probe/script/probe.py)"

// maxProbeRunLine bounds one line of a runs or campaign file.
const maxProbeRunLine = 16 << 20

// probeRunFiles are the committed records of gpumem's own runs, apart from
// the published measurements; testdata/probe-runs.jsonl exists (holding
// only a comment until a GPU has run the campaign) so the pattern always
// matches.
//
//go:embed testdata/probe-runs*.jsonl
var probeRunFiles embed.FS

// ProbeRun is one job of the probe campaign measured on a GPU: what ran,
// on what, with which software, and the synthetic probe's result.
type ProbeRun struct {
	Schema string `json:"schema"`
	// ID is the campaign's job id (probe/campaign/matrix.go).
	ID string `json:"id"`
	// Model is the catalog model (alias) the job built with random weights.
	Model   string `json:"model"`
	ModelID string `json:"model_id,omitempty"`
	// Groups and What say what the job varies and runs.
	Groups []string `json:"groups,omitempty"`
	What   string   `json:"what,omitempty"`
	// Note says where the estimate does not model the run exactly.
	Note string `json:"note,omitempty"`
	// Status is StatusOK or StatusOOM.
	Status string `json:"status"`
	// Job is the job the probe ran, as gpumem estimates it (no GPU:
	// the report estimates it for GPU.Name).
	Job memory.Job `json:"job"`
	// CacheImplementation is the generate cache the probe used ("" is
	// transformers' dynamic cache).
	CacheImplementation string            `json:"cache_implementation,omitempty"`
	GPU                 ProbeGPU          `json:"gpu"`
	Software            map[string]string `json:"software"`
	Provenance          ProbeProvenance   `json:"provenance"`
	// Result is the probe's gpumem-probe/1 line.
	Result probe.SyntheticResult `json:"result"`
}

// ProbeGPU is the GPU a run used.
type ProbeGPU struct {
	// Name is torch.cuda.get_device_name ("NVIDIA H100 80GB HBM3").
	Name string `json:"name"`
	// CUDATotalBytes and CUDAFreeBytes are torch.cuda.mem_get_info once
	// the probe's CUDA context existed.
	CUDATotalBytes units.Bytes `json:"cuda_total_bytes,omitempty"`
	CUDAFreeBytes  units.Bytes `json:"cuda_free_bytes,omitempty"`
	// NVMLTotalBytes is the memory NVML reports (what nvidia-smi shows).
	NVMLTotalBytes units.Bytes `json:"nvml_total_bytes,omitempty"`
	Driver         string      `json:"driver,omitempty"`
	Capability     string      `json:"capability,omitempty"`
}

// ProbeProvenance says where a run's numbers come from.
type ProbeProvenance struct {
	Source string `json:"source"`
	// MeasuredAt is when the job started (UTC); CampaignStartedAt when
	// its campaign did.
	MeasuredAt        string `json:"measured_at"`
	CampaignStartedAt string `json:"campaign_started_at,omitempty"`
	// The SHA-256 of the files that ran: the job list, the probe script,
	// the runner and the model's config.json.
	JobsSHA256   string `json:"jobs_sha256"`
	ProbeSHA256  string `json:"probe_sha256"`
	RunnerSHA256 string `json:"runner_sha256,omitempty"`
	ConfigSHA256 string `json:"config_sha256,omitempty"`
	// Warmup and Steps are the probe's warm-up and measured steps.
	Warmup int `json:"warmup"`
	Steps  int `json:"steps"`
	// WallSeconds is how long the job's process ran.
	WallSeconds float64 `json:"wall_s"`
}

// key identifies a run across files: the same job may run on two GPUs.
func (r ProbeRun) key() string { return r.ID + " on " + r.GPU.Name }

// validate checks what the report relies on.
func (r *ProbeRun) validate() error {
	switch {
	case r.Schema != ProbeRunSchema:
		return fmt.Errorf("schema %q: want %q", r.Schema, ProbeRunSchema)
	case r.ID == "":
		return errors.New("missing id")
	case r.Model == "":
		return fmt.Errorf("%s: missing model", r.ID)
	case r.GPU.Name == "":
		return fmt.Errorf("%s: missing gpu.name", r.ID)
	case r.Provenance.MeasuredAt == "" || r.Provenance.JobsSHA256 == "" || r.Provenance.ProbeSHA256 == "":
		return fmt.Errorf("%s: provenance needs measured_at, jobs_sha256 and probe_sha256", r.ID)
	}
	return checkResult(r.ID, r.Status, r.Result)
}

// checkResult checks a run's probe result against its status, with the
// checks the probe package applies to a result line.
func checkResult(id, status string, res probe.SyntheticResult) error {
	line, err := json.Marshal(res)
	if err != nil {
		return fmt.Errorf("%s: result: %w", id, err)
	}
	if _, err := probe.ParseSyntheticOutput(line); err != nil {
		return fmt.Errorf("%s: result: %w", id, err)
	}
	switch status {
	case StatusOK:
		if !res.OK {
			return fmt.Errorf("%s: status ok but the result failed (%s)", id, res.ErrorKind)
		}
	case StatusOOM:
		if res.OK || res.ErrorKind != "oom" {
			return fmt.Errorf("%s: status oom but the result's error_kind is %q", id, res.ErrorKind)
		}
	default:
		return fmt.Errorf("%s: status %q: a record is a measured run, ok or oom", id, status)
	}
	return nil
}

// ReadProbeRuns reads a file of probe-run records: one JSON object per
// line, blank lines and lines starting with "#" skipped. Unknown keys,
// a duplicate run and a record without provenance are errors naming the
// file and line.
func ReadProbeRuns(r io.Reader, file string) ([]ProbeRun, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxProbeRunLine)
	var runs []ProbeRun
	seen := map[string]int{}
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 || line[0] == '#' {
			continue
		}
		var run ProbeRun
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&run); err != nil {
			return nil, fmt.Errorf("%s line %d: %w", file, n, err)
		}
		if err := run.validate(); err != nil {
			return nil, fmt.Errorf("%s line %d: %w", file, n, err)
		}
		if prev, ok := seen[run.key()]; ok {
			return nil, fmt.Errorf("%s line %d: %s is also on line %d", file, n, run.key(), prev)
		}
		seen[run.key()] = n
		runs = append(runs, run)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return runs, nil
}

// BuiltinProbeRuns returns the committed records of gpumem's own runs
// (accuracy/testdata/probe-runs*.jsonl), file by file in name order. None
// means no GPU has run the campaign yet.
func BuiltinProbeRuns() ([]ProbeRun, error) {
	names, err := fs.Glob(probeRunFiles, "testdata/probe-runs*.jsonl")
	if err != nil {
		return nil, err
	}
	slices.Sort(names)
	var all []ProbeRun
	seen := map[string]string{}
	for _, name := range names {
		data, err := probeRunFiles.ReadFile(name)
		if err != nil {
			return nil, err
		}
		runs, err := ReadProbeRuns(bytes.NewReader(data), "accuracy/"+name)
		if err != nil {
			return nil, err
		}
		for _, r := range runs {
			if prev, ok := seen[r.key()]; ok {
				return nil, fmt.Errorf("accuracy/%s: %s is also in %s", name, r.key(), prev)
			}
			seen[r.key()] = name
		}
		all = append(all, runs...)
	}
	return all, nil
}

// WriteProbeRuns writes runs as a probe-runs file, one line each.
func WriteProbeRuns(w io.Writer, runs []ProbeRun) error {
	for _, r := range runs {
		line, err := json.Marshal(r)
		if err != nil {
			return err
		}
		if _, err := w.Write(append(line, '\n')); err != nil {
			return err
		}
	}
	return nil
}

// CampaignLeft is a campaign job that measured nothing: skipped, failed,
// crashed, timed out or not run.
type CampaignLeft struct {
	ID     string `json:"id"`
	Status string `json:"status"`
	Reason string `json:"reason,omitempty"`
}

// campaignLine is one line of the campaign runner's results.jsonl
// (probe/campaign/campaign.py).
type campaignLine struct {
	Schema   string `json:"schema"`
	Campaign struct {
		JobsSHA256   string `json:"jobs_sha256"`
		ProbeSHA256  string `json:"probe_sha256"`
		RunnerSHA256 string `json:"runner_sha256"`
		StartedAt    string `json:"started_at"`
		Warmup       int    `json:"warmup"`
		Steps        int    `json:"steps"`
	} `json:"campaign"`
	ID                  string            `json:"id"`
	Model               string            `json:"model"`
	ModelID             string            `json:"model_id"`
	Groups              []string          `json:"groups"`
	What                string            `json:"what"`
	Note                string            `json:"note"`
	Job                 json.RawMessage   `json:"job"`
	CacheImplementation string            `json:"cache_implementation"`
	ConfigSHA256        string            `json:"config_sha256"`
	Status              string            `json:"status"`
	Reason              string            `json:"reason"`
	StartedAt           string            `json:"started_at"`
	WallSeconds         float64           `json:"wall_s"`
	GPU                 ProbeGPU          `json:"gpu"`
	Software            map[string]string `json:"software"`
	Result              json.RawMessage   `json:"result"`
}

// ParseCampaign reads the campaign runner's results (one line per job,
// the last line of a job winning, as a resumed campaign appends) and
// returns the measured runs as records with their provenance, and the
// jobs that measured nothing with the reason. Errors name the file, the
// line and the key.
func ParseCampaign(r io.Reader, file string) ([]ProbeRun, []CampaignLeft, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxProbeRunLine)
	last := map[string]campaignLine{}
	lineOf := map[string]int{}
	var order []string
	for n := 1; sc.Scan(); n++ {
		raw := bytes.TrimSpace(sc.Bytes())
		if len(raw) == 0 {
			continue
		}
		var l campaignLine
		if err := json.Unmarshal(raw, &l); err != nil {
			return nil, nil, fmt.Errorf("%s line %d: %w", file, n, err)
		}
		if l.Schema != campaignSchema {
			return nil, nil, fmt.Errorf("%s line %d: schema %q: want %q (a results.jsonl of probe/campaign/campaign.py)", file, n, l.Schema, campaignSchema)
		}
		if l.ID == "" || l.Status == "" {
			return nil, nil, fmt.Errorf("%s line %d: want an id and a status", file, n)
		}
		if _, ok := last[l.ID]; !ok {
			order = append(order, l.ID)
		}
		last[l.ID], lineOf[l.ID] = l, n
	}
	if err := sc.Err(); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", file, err)
	}
	if len(order) == 0 {
		return nil, nil, fmt.Errorf("%s: no campaign lines", file)
	}
	var runs []ProbeRun
	var left []CampaignLeft
	for _, id := range order {
		l := last[id]
		if l.Status != StatusOK && l.Status != StatusOOM {
			left = append(left, CampaignLeft{ID: id, Status: l.Status, Reason: l.Reason})
			continue
		}
		run, err := l.record()
		if err != nil {
			return nil, nil, fmt.Errorf("%s line %d: %w", file, lineOf[id], err)
		}
		runs = append(runs, run)
	}
	return runs, left, nil
}

// record turns a measured campaign line into a probe-run record.
func (l campaignLine) record() (ProbeRun, error) {
	var job memory.Job
	dec := json.NewDecoder(bytes.NewReader(l.Job))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&job); err != nil {
		return ProbeRun{}, fmt.Errorf("%s: job: %w", l.ID, err)
	}
	res, err := probe.ParseSyntheticOutput(l.Result)
	if err != nil {
		return ProbeRun{}, fmt.Errorf("%s: result: %w", l.ID, err)
	}
	g := l.GPU
	if g.Name == "" {
		g.Name = res.Device.Name
	}
	g.CUDATotalBytes = cmp.Or(g.CUDATotalBytes, res.Device.CUDATotalBytes)
	g.CUDAFreeBytes = cmp.Or(g.CUDAFreeBytes, res.Device.CUDAFreeBytes)
	g.Capability = cmp.Or(g.Capability, res.Device.Capability)
	g.Driver = cmp.Or(g.Driver, res.Software.Driver)
	run := ProbeRun{
		Schema: ProbeRunSchema, ID: l.ID, Model: l.Model, ModelID: l.ModelID, Groups: l.Groups, What: l.What, Note: l.Note,
		Status: l.Status, Job: job, CacheImplementation: l.CacheImplementation, GPU: g, Software: l.Software,
		Provenance: ProbeProvenance{
			Source: probeRunSource, MeasuredAt: l.StartedAt, CampaignStartedAt: l.Campaign.StartedAt,
			JobsSHA256: l.Campaign.JobsSHA256, ProbeSHA256: l.Campaign.ProbeSHA256, RunnerSHA256: l.Campaign.RunnerSHA256,
			ConfigSHA256: l.ConfigSHA256, Warmup: l.Campaign.Warmup, Steps: l.Campaign.Steps, WallSeconds: l.WallSeconds,
		},
		Result: res,
	}
	if err := run.validate(); err != nil {
		return ProbeRun{}, err
	}
	return run, nil
}
