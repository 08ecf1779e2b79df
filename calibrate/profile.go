package calibrate

import (
	"bytes"
	"cmp"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"sort"

	"github.com/gpumem/gpumem/gpu"
	"github.com/gpumem/gpumem/internal/fsutil"
	"github.com/gpumem/gpumem/internal/jsonkeys"
	"github.com/gpumem/gpumem/memory"
	"github.com/gpumem/gpumem/plan"
	"github.com/gpumem/gpumem/probe"
)

// ProfileSchema is the "schema" value of a calibration profile.
const ProfileSchema = "gpumem-calibration/1"

// Profile is a calibration profile: overrides of the memory model's named
// constants fitted to measured runs on one GPU kind and software stack.
type Profile struct {
	// Schema is always [ProfileSchema].
	Schema string `json:"schema"`
	// Name identifies the profile in tables.
	Name string `json:"name"`
	// GPU is the GPU kind the runs used (a catalog name of package gpu);
	// empty for a profile that applies to any GPU.
	GPU string `json:"gpu,omitempty"`
	// Software is the stack the runs used (torch and CUDA versions, ...).
	Software probe.Software `json:"software"`
	// Constants are the overrides, by name as [memory.Constants] lists them.
	Constants map[string]float64 `json:"constants"`
	// Fit says how the overrides were obtained; nil for hand-written profiles.
	Fit *FitStats `json:"fit,omitempty"`
	// Notes explain the profile to its reader.
	Notes []string `json:"notes,omitempty"`
}

//go:embed default.json
var defaultProfile []byte

// Default returns the profile built into gpumem. It overrides nothing: no
// runs on real GPUs were made to fit it, so the memory model's documented
// defaults stand (see the profile's notes).
func Default() Profile {
	p, err := ParseProfile(defaultProfile, "built-in default profile")
	if err != nil {
		panic(err) // the embedded file is checked by TestDefaultProfile
	}
	return p
}

// MaxProfileSize is the largest calibration profile read, in bytes: a
// profile is a few dozen constants with their fits, a few KiB.
const MaxProfileSize = 1 << 20

// LoadProfile reads and checks a calibration profile file.
func LoadProfile(path string) (Profile, error) {
	data, err := fsutil.ReadFile(path, MaxProfileSize)
	if err != nil {
		return Profile{}, fmt.Errorf("calibration profile: %w", err)
	}
	return ParseProfile(data, path)
}

// ParseProfile decodes and checks a profile; errors name file and key.
func ParseProfile(data []byte, file string) (Profile, error) {
	var p Profile
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return Profile{}, fmt.Errorf("%s: %w", file, err)
	}
	if err := jsonkeys.Check(data); err != nil {
		return Profile{}, fmt.Errorf("%s: %w", file, err)
	}
	if dec.More() {
		return Profile{}, fmt.Errorf("%s: more than one JSON value", file)
	}
	if err := p.Validate(); err != nil {
		return Profile{}, fmt.Errorf("%s: %w", file, err)
	}
	return p, nil
}

// Validate checks the schema, the GPU kind and every constant's name and
// range against [memory.Constants].
func (p Profile) Validate() error {
	if p.Schema != ProfileSchema {
		return fmt.Errorf("schema %q: want %q", p.Schema, ProfileSchema)
	}
	if p.GPU != "" {
		if g, err := gpu.Lookup(p.GPU); err != nil || g.Name != p.GPU {
			return fmt.Errorf("gpu %q: want a catalog GPU, spelled as 'gpumem gpus' lists it", p.GPU)
		}
	}
	infos := constantInfos()
	for _, name := range sortedKeys(p.Constants) {
		v := p.Constants[name]
		info, ok := infos[name]
		if !ok {
			return fmt.Errorf("constants.%s: unknown constant (gpumem constants lists them)", name)
		}
		if math.IsNaN(v) || math.IsInf(v, 0) || v < info.Min || v > info.Max {
			return fmt.Errorf("constants.%s = %v: want a value in [%v, %v] %s", name, v, info.Min, info.Max, info.Unit)
		}
	}
	return nil
}

// ErrGPUMismatch reports a profile applied to a job on another GPU kind.
var ErrGPUMismatch = errors.New("calibration profile is for another GPU kind")

// Apply merges the profile's constants into job.Constants. Constants the
// job already sets (--set) win over the profile. A job without a GPU gets
// the profile's GPU kind; a job on another GPU kind is an error, since the
// corrections were measured on the profile's kind.
func (p Profile) Apply(job *memory.Job) error {
	if p.GPU != "" {
		g, err := gpu.Lookup(cmp.Or(job.GPU, p.GPU))
		switch {
		case job.GPU == "" && err == nil:
			// The profile's board, with the facts the estimator reads.
			*job = plan.OnGPU(*job, g)
		case job.GPU == "":
			job.GPU = p.GPU
		case err != nil || g.Name != p.GPU:
			return fmt.Errorf("%w: profile %q is for %s, the job runs on %s", ErrGPUMismatch, p.Name, p.GPU, job.GPU)
		}
	}
	if len(p.Constants) == 0 {
		return nil
	}
	merged := make(map[string]float64, len(p.Constants)+len(job.Constants))
	for k, v := range p.Constants {
		merged[k] = v
	}
	for k, v := range job.Constants {
		merged[k] = v
	}
	if _, err := memory.RuntimeOverheads(memory.Job{Constants: merged}); err != nil {
		return fmt.Errorf("calibration profile %q: %w", p.Name, err)
	}
	job.Constants = merged
	return nil
}

// Save writes the profile as indented JSON.
func (p Profile) Save(path string) error {
	data, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return fmt.Errorf("encode calibration profile: %w", err)
	}
	if err := os.WriteFile(path, append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("write calibration profile: %w", err)
	}
	return nil
}

// constantInfos indexes memory.Constants by name.
func constantInfos() map[string]memory.ConstantInfo {
	out := map[string]memory.ConstantInfo{}
	for _, c := range memory.Constants() {
		out[c.Name] = c
	}
	return out
}

func sortedKeys(m map[string]float64) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
