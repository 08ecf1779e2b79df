package web_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/gpumem/gpumem/gpu"
	"github.com/gpumem/gpumem/internal/web"
	"github.com/gpumem/gpumem/memory"
	"github.com/gpumem/gpumem/units"
)

// TestEstimateUserGPU checks that /api/estimate sees the boards of the
// server's catalog (gpumem serve --gpus-file), not only the built-ins.
func TestEstimateUserGPU(t *testing.T) {
	cat, err := gpu.Default().Merge([]gpu.GPU{{Name: "Lab-H", Vendor: "nvidia", Memory: 60 * units.GiB, ComputeCapability: "9.0"}})
	if err != nil {
		t.Fatal(err)
	}
	h := web.New(web.Options{GPUs: cat}).Handler()
	rec := do(t, h, "GET", "/api/estimate?model=llama3-8b&mode=serving&gpu=lab-h&max_model_len=4096", "")
	if rec.Code != http.StatusOK {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	var r memory.Result
	if err := json.Unmarshal(rec.Body.Bytes(), &r); err != nil {
		t.Fatal(err)
	}
	if r.Job.GPU != "Lab-H" || r.Job.GPUComputeCapability != 90 || r.Serving == nil || r.Serving.GPUMemoryBytes != 60*units.GiB {
		t.Errorf("job GPU %q cc %d, serving %+v; want Lab-H, 90 and 60 GiB", r.Job.GPU, r.Job.GPUComputeCapability, r.Serving)
	}
	// The default server does not know the board.
	rec = do(t, web.New(web.Options{}).Handler(), "GET", "/api/estimate?model=llama3-8b&gpu=lab-h", "")
	if e := decodeError(t, rec.Body.Bytes()); rec.Code != http.StatusBadRequest || e.Field != "gpu" {
		t.Errorf("unknown board: status %d, error %+v", rec.Code, e)
	}
}
