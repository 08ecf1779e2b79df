package memory

import (
	"testing"

	"github.com/gpumem/gpumem/model"
	"github.com/gpumem/gpumem/units"
)

// TestInferenceWholeCatalog runs an inference and a serving estimate on
// every real config of the catalog and checks the invariants that hold
// for all of them.
func TestInferenceWholeCatalog(t *testing.T) {
	for _, e := range model.Catalog() {
		m, err := model.Lookup(e.ID)
		if err != nil {
			t.Errorf("%s: %v", e.ID, err)
			continue
		}
		prompt := 512
		if mp := m.Text.MaxPositions; mp > 0 && mp < 2*prompt {
			prompt = mp / 4
		}
		job := Job{Mode: Inference, Batch: 2, PromptLen: prompt}
		if m.Text.Causal {
			job.GenLen = prompt / 2
		}
		r, err := Estimate(m, job)
		if err != nil {
			t.Errorf("%s inference: %v", e.ID, err)
			continue
		}
		checkLevels(t, e.ID, r)
		if w := component(t, r, "weights").Bytes; w < units.Bytes(r.TotalParams/2) {
			t.Errorf("%s: weights %v for %d params: below 4 bits per parameter", e.ID, w, r.TotalParams)
		}
		s, err := Estimate(m, Job{Mode: Serving, GPU: "H200", GPUComputeCapability: 90, GPUMemory: 140 * units.GiB, MaxModelLen: 2 * prompt})
		if err != nil {
			t.Errorf("%s serving: %v", e.ID, err)
			continue
		}
		sv := s.Serving
		if sv.KVBytesPerToken <= 0 && m.Text.Causal {
			t.Errorf("%s: %d KV bytes per token", e.ID, sv.KVBytesPerToken)
		}
		if sv.KVPoolBytes < 0 || sv.KVPoolBytes > sv.RequestedBytes || sv.KVTokens < 0 {
			t.Errorf("%s: pool %v of %v requested, %d tokens", e.ID, sv.KVPoolBytes, sv.RequestedBytes, sv.KVTokens)
		}
	}
}

// checkLevels asserts that the rows of each level add up to the peaks.
// Sums saturate as the estimator's do, so a job whose KV cache alone
// reaches units.MaxBytes still adds up instead of wrapping around.
func checkLevels(t *testing.T, id string, r Result) {
	t.Helper()
	var sum [3]units.Bytes
	for _, c := range r.PerGPU.Components {
		if c.Bytes < 0 {
			t.Errorf("%s: %s is negative", id, c.Name)
		}
		switch c.Level {
		case "allocated":
			sum[0] = units.Add(sum[0], c.Bytes)
		case "reserved":
			sum[1] = units.Add(sum[1], c.Bytes)
		case "device":
			sum[2] = units.Add(sum[2], c.Bytes)
		}
	}
	p := r.PerGPU
	if sum[0] != p.AllocatedPeakBytes || units.Add(sum[0], sum[1]) != p.ReservedPeakBytes || units.Add(p.ReservedPeakBytes, sum[2]) != p.DevicePeakBytes {
		t.Errorf("%s: rows %v do not add up to the peaks %v / %v / %v", id, sum, p.AllocatedPeakBytes, p.ReservedPeakBytes, p.DevicePeakBytes)
	}
}
